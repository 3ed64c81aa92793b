//! Whether an error means olmpack refuses the input (exit 1) or that reading or doing
//! something failed (exit 2): every library error that can tell says so through [`RefusesInput`],
//! and [`of`] asks any error whether it is one of them.

use std::error::Error;

use crate::bundle::load::BundleLoadError;
use crate::image::layer::LayerError;
use crate::image::layout::LayoutError;
use crate::image::push::PushError;
use crate::input::InputError;
use crate::kubebuilder::KubebuilderError;
use crate::plan::PlanLoadError;
use olmpack_model::plan::PlanError;

/// An error that can say whether it refuses the input.
pub trait RefusesInput {
    /// `Some(true)` when the input is refused, `Some(false)` when the environment failed
    /// (a missing file, a network or I/O error), `None` when this error does not say.
    fn refusal(&self) -> Option<bool>;
}

impl RefusesInput for PlanLoadError {
    fn refusal(&self) -> Option<bool> {
        Some(self.is_invalid())
    }
}

impl RefusesInput for PlanError {
    fn refusal(&self) -> Option<bool> {
        Some(true)
    }
}

impl RefusesInput for InputError {
    fn refusal(&self) -> Option<bool> {
        Some(self.is_refusal())
    }
}

impl RefusesInput for KubebuilderError {
    fn refusal(&self) -> Option<bool> {
        Some(!matches!(self, KubebuilderError::Print(_)))
    }
}

impl RefusesInput for BundleLoadError {
    fn refusal(&self) -> Option<bool> {
        self.is_refusal()
    }
}

impl RefusesInput for LayerError {
    fn refusal(&self) -> Option<bool> {
        Some(self.is_refusal())
    }
}

impl RefusesInput for LayoutError {
    fn refusal(&self) -> Option<bool> {
        match self {
            LayoutError::BlobUnreadable { refusal, .. } => Some(*refusal),
            _ => None,
        }
    }
}

impl RefusesInput for PushError {
    fn refusal(&self) -> Option<bool> {
        match self {
            PushError::Layout(layout) => layout.refusal(),
            _ => None,
        }
    }
}

/// `E`'s answer, when `err` is an `E`.
fn ask<E: RefusesInput + Error + 'static>(err: &(dyn Error + 'static)) -> Option<bool> {
    err.downcast_ref::<E>().and_then(RefusesInput::refusal)
}

/// Every error type that implements [`RefusesInput`].
const KNOWN: &[fn(&(dyn Error + 'static)) -> Option<bool>] = &[
    ask::<PlanLoadError>,
    ask::<PlanError>,
    ask::<InputError>,
    ask::<BundleLoadError>,
    ask::<KubebuilderError>,
    ask::<LayerError>,
    ask::<LayoutError>,
    ask::<PushError>,
];

/// Whether `err` itself (not its sources) refuses the input; `None` when it does not say.
pub fn of(err: &(dyn Error + 'static)) -> Option<bool> {
    KNOWN.iter().find_map(|ask| ask(err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn known_errors_answer_and_others_do_not() {
        let missing = InputError::Io {
            path: PathBuf::from("plan.yaml"),
            problem: "no such file".into(),
            kind: std::io::ErrorKind::NotFound,
        };
        assert_eq!(of(&missing), Some(false));
        let refused = LayoutError::BlobUnreadable {
            layout: PathBuf::from("layout"),
            digest: "sha256:00".into(),
            problem: "is a directory".into(),
            refusal: true,
        };
        assert_eq!(of(&PushError::Layout(refused)), Some(true));
        assert_eq!(of(&std::io::Error::other("x")), None);
    }
}
