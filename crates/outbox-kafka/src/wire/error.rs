//! [`WireError`]: how a connection or a request fails below the level of Kafka's error
//! codes (connect, handshake, SASL, transport, timeout), and whether waiting can fix it.

use std::time::Duration;

use rskafka::client::SaslConfig;

/// A failure below the Kafka error-code level.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    /// TCP connect or TLS handshake failed.
    #[error("connecting to {addr} failed: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// The ApiVersions handshake failed.
    #[error("API version handshake with {addr} failed: {message}")]
    Handshake { addr: String, message: String },
    /// SASL authentication was refused or failed.
    #[error("SASL {mechanism} authentication with the broker at {addr} failed: {message}")]
    Sasl {
        addr: String,
        mechanism: &'static str,
        message: String,
    },
    /// The broker supports no version of a request this client can send.
    #[error("the broker at {addr} supports no usable version of {api}")]
    Unsupported { addr: String, api: &'static str },
    /// The connection broke while a request was on it.
    #[error("request to {addr} failed: {message}")]
    Transport { addr: String, message: String },
    /// No answer in time.
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout { addr: String, timeout: Duration },
}

impl WireError {
    /// The same failure again, for each partition of a request that failed as a whole.
    pub(crate) fn duplicate(&self) -> WireError {
        match self {
            WireError::Connect { addr, source } => WireError::Connect {
                addr: addr.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            WireError::Handshake { addr, message } => WireError::Handshake {
                addr: addr.clone(),
                message: message.clone(),
            },
            WireError::Sasl {
                addr,
                mechanism,
                message,
            } => WireError::Sasl {
                addr: addr.clone(),
                mechanism,
                message: message.clone(),
            },
            WireError::Unsupported { addr, api } => WireError::Unsupported {
                addr: addr.clone(),
                api,
            },
            WireError::Transport { addr, message } => WireError::Transport {
                addr: addr.clone(),
                message: message.clone(),
            },
            WireError::Timeout { addr, timeout } => WireError::Timeout {
                addr: addr.clone(),
                timeout: *timeout,
            },
        }
    }

    /// Whether an operator has to fix something (credentials, broker version) before
    /// retrying can help.
    pub(crate) fn is_permanent(&self) -> bool {
        match self {
            WireError::Sasl { .. } | WireError::Unsupported { .. } => true,
            // rustls reports a failed handshake (untrusted certificate, wrong host
            // name) as invalid data; waiting does not fix a certificate.
            WireError::Connect { source, .. } => source.kind() == std::io::ErrorKind::InvalidData,
            _ => false,
        }
    }
}

/// The SASL mechanism's registered name, for errors.
pub(super) fn sasl_mechanism(sasl: &SaslConfig) -> &'static str {
    match sasl {
        SaslConfig::Plain(_) => "PLAIN",
        SaslConfig::ScramSha256(_) => "SCRAM-SHA-256",
        SaslConfig::ScramSha512(_) => "SCRAM-SHA-512",
        SaslConfig::Oauthbearer(_) => "OAUTHBEARER",
    }
}
