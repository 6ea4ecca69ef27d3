//! The release pipeline of `audit`: binaries and wheels judged against a policy's targets, not this machine's
//! (audit runs on CI runners without GPUs).

use super::ToolError;
use crate::facts::{BinaryFacts, Facts, WheelFacts};
use crate::matrix::Matrix;
use crate::policy::Policy;
use crate::rules::Judgement;

/// Judges a release's `binaries` and `wheels` for `policy`'s targets as of `today`: the facts (with what pip
/// installs beside each wheel) and the rules' judgement of them.
pub fn judge(
    binaries: Vec<BinaryFacts>,
    wheels: Vec<WheelFacts>,
    policy: &Policy,
    matrix: &Matrix,
    today: (i32, u32, u32),
) -> Result<(Facts, Judgement), ToolError> {
    let pip = crate::rules::wheel::Table::bundled().map_err(ToolError)?;
    let mut facts = Facts {
        binaries,
        wheels,
        host: crate::rules::policy::target_host(policy),
        ..Facts::default()
    };
    // What pip installs beside each wheel, before the rules: a pinned runtime is the version they check.
    crate::rules::wheel::resolve(&mut facts, &pip);
    let findings = crate::rules::evaluate_release(&facts, policy, matrix, &pip, today);
    let verdicts = crate::rules::verdicts(&facts, &findings, matrix);
    let judgement = Judgement::of(&facts, findings, verdicts);
    Ok((facts, judgement))
}
