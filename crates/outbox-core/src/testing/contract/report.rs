//! What a run of a contract suite found: the checks that passed, and those that did not
//! apply to the store, each named with the capability it lacks. A check skipped for a
//! missing capability is counted and named here, never passed silently.

use std::fmt;

use crate::store::StoreCapabilities;

/// An optional capability a check needs: a field of [`StoreCapabilities`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// [`StoreCapabilities::lease_renewal`].
    LeaseRenewal,
    /// [`StoreCapabilities::backlog_metrics`].
    BacklogMetrics,
    /// [`StoreCapabilities::lease_release`].
    LeaseRelease,
    /// [`StoreCapabilities::parking`].
    Parking,
}

impl Capability {
    /// The name of the [`StoreCapabilities`] field, as the report prints it.
    pub fn name(self) -> &'static str {
        match self {
            Capability::LeaseRenewal => "lease_renewal",
            Capability::BacklogMetrics => "backlog_metrics",
            Capability::LeaseRelease => "lease_release",
            Capability::Parking => "parking",
        }
    }

    /// Whether `capabilities` claims this one.
    pub fn is_in(self, capabilities: StoreCapabilities) -> bool {
        match self {
            Capability::LeaseRenewal => capabilities.lease_renewal,
            Capability::BacklogMetrics => capabilities.backlog_metrics,
            Capability::LeaseRelease => capabilities.lease_release,
            Capability::Parking => capabilities.parking,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one check found. A failing check panics, so there is no failure variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a check that did not apply must be reported, not dropped"]
pub enum CheckOutcome {
    /// The check ran and every assertion held.
    Passed,
    /// The store lacks the capability the check exercises, so nothing was checked.
    NotApplicable(Capability),
}

/// A check with no capability to need passes whenever it returns.
impl From<()> for CheckOutcome {
    fn from((): ()) -> Self {
        CheckOutcome::Passed
    }
}

/// A check that did not apply, and the capability the store lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotApplicable {
    /// The check's function name.
    pub check: &'static str,
    /// The capability the store does not claim.
    pub missing: Capability,
}

/// The outcome of a whole suite: its [`Display`](fmt::Display) is the summary the suite
/// prints, e.g. `store contract: 13 checks passed, 3 not applicable (lease_renewal:
/// renewal_extends_held_leases_and_reports_lost_ones, ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a contract report names the checks that did not apply; look at it"]
pub struct ContractReport {
    suite: &'static str,
    passed: Vec<&'static str>,
    not_applicable: Vec<NotApplicable>,
}

impl ContractReport {
    /// An empty report for the suite called `suite` (e.g. "store contract").
    pub fn new(suite: &'static str) -> Self {
        ContractReport {
            suite,
            passed: Vec::new(),
            not_applicable: Vec::new(),
        }
    }

    /// Records what the check named `check` found.
    pub fn record(&mut self, check: &'static str, outcome: CheckOutcome) {
        match outcome {
            CheckOutcome::Passed => self.passed.push(check),
            CheckOutcome::NotApplicable(missing) => {
                self.not_applicable.push(NotApplicable { check, missing });
            }
        }
    }

    /// The suite's name, as the summary starts.
    pub fn suite(&self) -> &'static str {
        self.suite
    }

    /// The checks that ran and passed, in the order they ran.
    pub fn passed(&self) -> &[&'static str] {
        &self.passed
    }

    /// The checks that did not apply, in the order they were reached.
    pub fn not_applicable(&self) -> &[NotApplicable] {
        &self.not_applicable
    }
}

impl fmt::Display for ContractReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} checks passed, {} not applicable",
            self.suite,
            self.passed.len(),
            self.not_applicable.len()
        )?;
        for (i, skipped) in self.not_applicable.iter().enumerate() {
            let lead = if i == 0 { " (" } else { ", " };
            write!(f, "{lead}{}: {}", skipped.missing, skipped.check)?;
        }
        if !self.not_applicable.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// `run_check!(report, make, check)`: runs `check` on a fresh fixture from `make` and
/// records its outcome under the check's own function name, so a report can never name a
/// check other than the one that ran.
macro_rules! run_check {
    ($report:ident, $make:ident, $check:ident) => {
        $report.record(
            stringify!($check),
            $crate::testing::contract::CheckOutcome::from($check(&$make().await).await),
        )
    };
}
pub(crate) use run_check;
