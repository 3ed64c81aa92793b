//! Enumerations a user picks by name (output formats, migrate levels).
//!
//! The library names its choices here; the command line turns them into flags. Keeping the
//! names in the library, without an argument parser, lets any front end offer the same words.

/// A closed set of values, each with one name a user types.
pub trait Choice: Sized + Copy + 'static {
    /// Every value with its name, in the order help lists them.
    const CHOICES: &'static [(&'static str, Self)];

    /// The value called `name`, if there is one.
    fn from_name(name: &str) -> Option<Self> {
        Self::CHOICES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The names, in order.
    fn names() -> impl Iterator<Item = &'static str> {
        Self::CHOICES.iter().map(|(n, _)| *n)
    }
}
