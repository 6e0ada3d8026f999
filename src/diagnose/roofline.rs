//! Roofline rules `memory-bound` and `compute-bound` (filled in once operator shapes are
//! read).

use super::device::Claims;
use super::{Facts, Finding};

/// Roofline findings.
pub fn rules(_f: &Facts, _claims: &mut Claims) -> Vec<Finding> {
    Vec::new()
}

/// Input shapes and dtypes of the first calls of the named operators, as evidence lines;
/// `None` when the trace does not record shapes.
pub fn shapes_of_ops(_f: &Facts, _names: &[String], _n: usize) -> Option<Vec<String>> {
    None
}
