//! Whether an error means olmpack refuses the input (exit 1) or that olmpack could not do its
//! job (exit 2): every error that can reach the command line says which through [`Refusal`],
//! implemented beside the error (a wrapping error asks the error it wraps, by type). A command
//! stops with a [`CommandError`], whose variant is the exit code, and only an error that says
//! becomes one: an error that does not say cannot reach `main` — the compiler refuses it,
//! where a list of known errors would let it through as exit 2.
//!
//! ```
//! # use olmpack::refusal::{CommandError, Refusal};
//! #[derive(Debug)]
//! struct Undecided;
//! impl std::fmt::Display for Undecided {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("undecided")
//!     }
//! }
//! impl std::error::Error for Undecided {}
//! impl Refusal for Undecided {
//!     fn refuses_input(&self) -> bool {
//!         true
//!     }
//! }
//! assert_eq!(CommandError::from(Undecided).exit_code(), 1);
//! ```
//!
//! The same error without its [`Refusal`] does not compile:
//!
//! ```compile_fail
//! # use olmpack::refusal::CommandError;
//! #[derive(Debug)]
//! struct Undecided;
//! impl std::fmt::Display for Undecided {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("undecided")
//!     }
//! }
//! impl std::error::Error for Undecided {}
//! assert_eq!(CommandError::from(Undecided).exit_code(), 1);
//! ```

use std::error::Error;

/// Why a command stopped; the variant is its exit code.
#[derive(Debug)]
pub enum CommandError {
    /// olmpack refuses the input: exit 1.
    Refused(Box<dyn Error + Send + Sync>),
    /// olmpack could not do its job: exit 2.
    Failed(Box<dyn Error + Send + Sync>),
}

impl CommandError {
    /// The exit code: 1 when the input is refused, 2 when olmpack could not do its job.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Refused(_) => 1,
            CommandError::Failed(_) => 2,
        }
    }

    /// The error that stopped the command.
    pub fn error(&self) -> &(dyn Error + 'static) {
        match self {
            CommandError::Refused(err) | CommandError::Failed(err) => err.as_ref(),
        }
    }
}

impl<E: Refusal + Error + Send + Sync + 'static> From<E> for CommandError {
    fn from(err: E) -> Self {
        if err.refuses_input() {
            CommandError::Refused(Box::new(err))
        } else {
            CommandError::Failed(Box::new(err))
        }
    }
}

/// An error that says whether olmpack refuses the input.
pub trait Refusal {
    /// True when olmpack refuses the input (exit 1: invalid input, input it refuses to read);
    /// false when it could not do its job (exit 2: a missing or unreadable input, an output it
    /// may not replace, I/O or network failure).
    fn refuses_input(&self) -> bool;
}

/// The file system or a stream failed: olmpack could not do its job.
impl Refusal for std::io::Error {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// Printing JSON failed: olmpack could not do its job.
impl Refusal for serde_json::Error {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// A release plan that is invalid.
impl Refusal for olmpack_model::plan::PlanError {
    fn refuses_input(&self) -> bool {
        true
    }
}

/// A CSV's `alm-examples` that is not a JSON array of objects.
impl Refusal for olmpack_model::csv::examples::ExamplesError {
    fn refuses_input(&self) -> bool {
        true
    }
}

/// The errors of the lower layer, [`olmpack_oci`], say through its own
/// [`RefusesInput`](olmpack_oci::RefusesInput), implemented beside each of them; here each is
/// asked. One line per error: an error of that crate missing here cannot reach `main`.
macro_rules! ask_the_lower_layer {
    ($($error:ty),* $(,)?) => {
        $(
            impl Refusal for $error {
                fn refuses_input(&self) -> bool {
                    olmpack_oci::RefusesInput::refuses_input(self)
                }
            }
        )*
    };
}

ask_the_lower_layer!(
    olmpack_oci::input::InputError,
    olmpack_oci::output::OutputError,
    olmpack_oci::image::base::BaseError,
    olmpack_oci::image::build::BuildError,
    olmpack_oci::image::layer::LayerError,
    olmpack_oci::image::layout::LayoutError,
    olmpack_oci::image::operator::OperatorError,
    olmpack_oci::image::pull::PullError,
    olmpack_oci::image::push::PushError,
    olmpack_oci::image::reference::ReferenceError,
    olmpack_oci::image::registry::RegistryError,
    olmpack_oci::image::resolve::ResolveError,
    olmpack_oci::supply::attach::AttachError,
    olmpack_oci::supply::cosign::KeyError,
    olmpack_oci::supply::cosign::SignError,
    olmpack_oci::supply::oci::RepoError,
    olmpack_oci::supply::sbom::SbomError,
);

impl<E: Refusal + ?Sized> Refusal for Box<E> {
    fn refuses_input(&self) -> bool {
        (**self).refuses_input()
    }
}
