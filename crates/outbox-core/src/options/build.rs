//! The rules [`RelayOptionsBuilder::build`] checks, in order, each rejecting with its
//! own [`OptionsError`]; the default relay id is put together here, once
//! `metrics_name` is known.

use super::builder::RelayOptionsBuilder;
use super::error::OptionsError;
use super::identity::{RelayIdSource, derive_relay_id};
use super::relay_options::RelayOptions;
use crate::validate::{MAX_METRICS_NAME_LEN, MAX_RELAY_ID_LEN, validate_label};

impl RelayOptionsBuilder {
    /// Validates every rule and returns the options, or the first violation.
    pub fn build(self) -> Result<RelayOptions, OptionsError> {
        let mut o = self.options;
        validate_label(&o.metrics_name, MAX_METRICS_NAME_LEN).map_err(OptionsError::MetricsName)?;
        (o.relay_id, o.relay_id_source) = match self.explicit_id {
            Some(id) => (id, RelayIdSource::Explicit),
            None => derive_relay_id(self.host.as_ref(), &o.metrics_name),
        };
        if o.relay_id_source == RelayIdSource::Generated {
            tracing::warn!(
                relay_id = %o.relay_id,
                "no host name found (POD_NAME, HOSTNAME, {}): the relay id is generated, so a restart after a crash waits a whole lease_duration for the old leases; set a stable relay id",
                crate::relay_id::KERNEL_HOSTNAME_PATH
            );
        }
        validate_label(&o.relay_id, MAX_RELAY_ID_LEN).map_err(OptionsError::RelayId)?;
        if o.batch_size == 0 {
            return Err(OptionsError::BatchSizeZero);
        }
        if o.max_concurrent_lanes == 0 {
            return Err(OptionsError::ConcurrentLanesZero);
        }
        for (name, value) in [
            ("poll_interval", o.poll_interval),
            ("lease_duration", o.lease_duration),
            ("lease_renew_interval", o.lease_renew_interval),
            ("metrics_collection_interval", o.metrics_collection_interval),
            ("metrics_collection_timeout", o.metrics_collection_timeout),
            ("error_backoff", o.error_backoff),
            ("max_error_backoff", o.max_error_backoff),
        ] {
            if value.is_zero() {
                return Err(OptionsError::ZeroDuration(name));
            }
        }
        if o.max_publish_duration
            .is_some_and(|budget| budget.is_zero())
        {
            return Err(OptionsError::ZeroDuration("max_publish_duration"));
        }
        if o.lease_renew_interval >= o.lease_duration {
            return Err(OptionsError::RenewNotBelowLease {
                renew: o.lease_renew_interval,
                lease: o.lease_duration,
            });
        }
        if let Some(budget) = o.max_publish_duration
            && budget.saturating_add(o.lease_renew_interval) > o.lease_duration
        {
            return Err(OptionsError::PublishBudgetTooLong {
                budget,
                renew: o.lease_renew_interval,
                lease: o.lease_duration,
            });
        }
        if o.error_backoff > o.max_error_backoff {
            return Err(OptionsError::BackoffOrder {
                initial: o.error_backoff,
                max: o.max_error_backoff,
            });
        }
        if o.metrics_collection_timeout > o.metrics_collection_interval {
            return Err(OptionsError::MetricsTimeoutAboveInterval {
                timeout: o.metrics_collection_timeout,
                interval: o.metrics_collection_interval,
            });
        }
        Ok(o)
    }
}
