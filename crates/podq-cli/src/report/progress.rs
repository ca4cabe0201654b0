//! Progress on stderr: on a terminal, a bar with the step and the time left, redrawn as the
//! time passes; otherwise one line per step.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::budget::Clock;
use super::human::duration;

/// How often the bar's time left is redrawn.
const TICK: Duration = Duration::from_millis(250);

/// The progress of a report.
pub(crate) struct Progress {
    /// The bar, on a terminal.
    bar: Option<ProgressBar>,
    /// The step shown, for the ticker.
    step: Arc<Mutex<String>>,
    /// Tells the ticker to stop.
    stop: Arc<AtomicBool>,
    /// The thread that redraws the bar.
    ticker: Option<JoinHandle<()>>,
    clock: Clock,
    total: usize,
}

impl Progress {
    /// Progress of `total` steps within `clock`'s budget.
    pub(crate) fn start(clock: Clock, total: usize) -> Progress {
        let step = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (bar, ticker) = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(clock.budget().as_millis() as u64);
            if let Ok(style) = ProgressStyle::with_template("{bar:30} {msg}") {
                bar.set_style(style);
            }
            let (b, s, st) = (bar.clone(), Arc::clone(&step), Arc::clone(&stop));
            let ticker = thread::Builder::new()
                .name("report-progress".into())
                .spawn(move || {
                    while !st.load(Ordering::Relaxed) {
                        b.set_position(clock.elapsed().as_millis() as u64);
                        let step = s.lock().unwrap_or_else(PoisonError::into_inner).clone();
                        b.set_message(format!("{step}, {} left", duration(clock.left())));
                        thread::park_timeout(TICK);
                    }
                })
                .ok();
            (Some(bar), ticker)
        } else {
            eprintln!(
                "podq report: {total} steps within {}",
                duration(clock.budget())
            );
            (None, None)
        };
        Progress {
            bar,
            step,
            stop,
            ticker,
            clock,
            total,
        }
    }

    /// Step `index` (from 0), named `id`, begins.
    pub(crate) fn begin(&self, index: usize, id: &str) {
        *self.step.lock().unwrap_or_else(PoisonError::into_inner) =
            format!("{}/{} {id}", index + 1, self.total);
    }

    /// Step `index`, named `id`, ended with `status` after `took`.
    pub(crate) fn end(&self, index: usize, id: &str, status: &str, took: Duration) {
        if self.bar.is_none() {
            eprintln!(
                "podq report: {}/{} {id}: {status} in {}, {} left",
                index + 1,
                self.total,
                duration(took),
                duration(self.clock.left())
            );
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
