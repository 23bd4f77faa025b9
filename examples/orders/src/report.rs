//! Progress bar and summary.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::consumer::Delivery;

/// A one-line progress bar on stderr (plain lines when stderr is not a terminal).
pub struct Progress {
    expected: u64,
    received: u64,
    tty: bool,
    last_line: u64,
}

impl Progress {
    /// Expects up to `expected` records (lowered once the writer knows its rollbacks).
    pub fn new(expected: u64) -> Self {
        Progress {
            expected,
            received: 0,
            tty: std::io::stderr().is_terminal(),
            last_line: 0,
        }
    }

    /// The writer finished: this many records will arrive.
    pub fn expect(&mut self, expected: u64) {
        self.expected = expected;
    }

    /// Records received so far (first deliveries only).
    pub fn received_count(&self) -> u64 {
        self.received
    }

    /// One first delivery.
    pub fn received(&mut self, delivery: &Delivery, print_every: u64) {
        self.received += 1;
        if print_every > 0 && self.received % print_every == 1 {
            self.clear();
            println!(
                "received   #{:<6} p{} key={} {}  [{}]",
                self.received,
                delivery.partition,
                delivery.key,
                delivery.value,
                delivery.message_id
            );
        }
        self.draw();
    }

    fn clear(&self) {
        if self.tty {
            eprint!("\r{:80}\r", "");
        }
    }

    fn draw(&mut self) {
        let expected = self.expected.max(1);
        let filled = (self.received * 40 / expected).min(40) as usize;
        if self.tty {
            eprint!(
                "\r[{}{}] {}/{} published",
                "#".repeat(filled),
                " ".repeat(40 - filled),
                self.received,
                self.expected
            );
            let _ = std::io::stderr().flush();
        } else if self.received >= self.last_line + expected / 10 {
            self.last_line = self.received;
            eprintln!("progress   {}/{} published", self.received, self.expected);
        }
    }

    /// Ends the bar's line.
    pub fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

/// The closing report.
pub struct Summary {
    /// Orders attempted.
    pub placed: u64,
    /// Orders rolled back by the business rule.
    pub rolled_back: u64,
    /// Distinct records received.
    pub published: u64,
    /// Copies dropped by deduplication.
    pub duplicates: u64,
    /// Records without a message id.
    pub unidentified: u64,
    /// Commit-to-consumer latencies.
    pub latencies: Vec<Duration>,
    /// Wall time.
    pub elapsed: Duration,
}

impl Summary {
    /// Prints the summary; false when the counts do not add up.
    pub fn print(mut self) -> bool {
        self.latencies.sort_unstable();
        let pick = |q: f64| {
            let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
            self.latencies.get(i).map_or("-".to_owned(), |d| {
                format!("{:.1} ms", d.as_secs_f64() * 1e3)
            })
        };
        println!("\nsummary");
        println!("  orders placed             {}", self.placed);
        println!("  rolled back (never sent)  {}", self.rolled_back);
        println!("  records published         {}", self.published);
        println!("  duplicates dropped        {}", self.duplicates);
        println!("  without message id        {}", self.unidentified);
        println!("  commit-to-consumer p50    {}", pick(0.50));
        println!("  commit-to-consumer p99    {}", pick(0.99));
        println!(
            "  wall time                 {:.1} s",
            self.elapsed.as_secs_f64()
        );
        let ok = self.published + self.rolled_back == self.placed && self.unidentified == 0;
        println!(
            "  {}",
            if ok {
                "every committed order was published exactly once after deduplication"
            } else {
                "MISMATCH: see the counts above"
            }
        );
        ok
    }
}
