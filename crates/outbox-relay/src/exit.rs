//! The exit statuses `--help` promises besides success (0) and a plain failure: shared by
//! `main`, which exits before starting, and `run`, which exits while running.

/// Exit status for invalid configuration (detected before starting).
pub const EXIT_CONFIG: u8 = 1;
/// Exit status for a misconfiguration detected while running (e.g. bucket counts differ).
pub const EXIT_FATAL: u8 = 2;
