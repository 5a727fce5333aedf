//! The slow-down of wrong API keys, per client address: the first [`FREE_TRIES`] wrong
//! keys are answered at once, each further one later than the one before (doubling
//! from [`FIRST_DELAY`] up to [`MAX_DELAY`]), at most [`HELD_PER_ADDRESS`] at a time per
//! address, so one address can test a few keys a second at most. It is asked only after
//! a key was found wrong: the right key is never delayed, from any address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::listener::Connection;

/// Wrong keys answered at once before the slow-down starts.
pub const FREE_TRIES: u32 = 10;
/// The delay of the first slowed answer.
pub const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The longest an answer is delayed.
pub const MAX_DELAY: Duration = Duration::from_secs(8);
/// Slowed answers one address may wait for at once; more wait their turn.
pub const HELD_PER_ADDRESS: usize = 4;
/// An address with no wrong key for this long starts afresh.
pub const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Addresses remembered at most (the oldest are forgotten first).
const MAX_ADDRESSES: usize = 4096;

/// Where wrong keys came from. An IPv6 client is one /64: a host is usually given a
/// whole one, and could otherwise change address for every try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    V4(u32),
    /// The first 64 bits.
    V6(u64),
}

impl Source {
    fn of(ip: IpAddr) -> Source {
        match ip {
            IpAddr::V4(v4) => Source::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::V4(u32::from(v4)),
                None => Source::V6((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

struct Record {
    wrong: u32,
    last: Instant,
    /// Turns to wait out a slowed answer.
    turns: Arc<Semaphore>,
}

/// Wrong keys by address.
#[derive(Default)]
pub struct WrongKeys {
    /// Taken briefly to count; never held across an await.
    sources: Mutex<HashMap<Source, Record>>,
}

/// The delay of the `wrong`-th wrong key in a row.
pub fn delay_of(wrong: u32) -> Duration {
    if wrong <= FREE_TRIES {
        return Duration::ZERO;
    }
    let doublings = (wrong - FREE_TRIES - 1).min(16);
    FIRST_DELAY.saturating_mul(1 << doublings).min(MAX_DELAY)
}

impl WrongKeys {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Source, Record>> {
        self.sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a wrong key from `ip` and returns how long its answer waits, with the
    /// turns of that address.
    fn note(&self, ip: IpAddr, now: Instant) -> (Duration, Arc<Semaphore>) {
        let mut sources = self.lock();
        if sources.len() >= MAX_ADDRESSES {
            sources.retain(|_, r| now.duration_since(r.last) < FORGET_AFTER);
            if sources.len() >= MAX_ADDRESSES {
                if let Some(oldest) = sources.iter().min_by_key(|(_, r)| r.last).map(|(s, _)| *s) {
                    sources.remove(&oldest);
                }
            }
        }
        let record = sources.entry(Source::of(ip)).or_insert_with(|| Record {
            wrong: 0,
            last: now,
            turns: Arc::new(Semaphore::new(HELD_PER_ADDRESS)),
        });
        if now.duration_since(record.last) >= FORGET_AFTER {
            record.wrong = 0;
        }
        record.wrong = record.wrong.saturating_add(1);
        record.last = now;
        (delay_of(record.wrong), Arc::clone(&record.turns))
    }

    /// The right key from `ip`: its earlier mistakes are forgiven.
    pub fn forgive(&self, ip: IpAddr) {
        self.lock().remove(&Source::of(ip));
    }

    /// Waits out the slow-down of a wrong key from `ip`. Meanwhile the request counts
    /// as held on its connection, which the listener may then close to make room.
    pub async fn slow_down(&self, ip: IpAddr, connection: Option<&Arc<Connection>>) {
        let (delay, turns) = self.note(ip, Instant::now());
        if delay.is_zero() {
            return;
        }
        let _held = connection.map(|c| c.hold());
        // The semaphore is never closed; a closed one would only skip the wait.
        let _turn = turns.acquire().await;
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_wrong_keys_are_free_then_each_waits_twice_as_long_up_to_eight_seconds() {
        assert_eq!(delay_of(10), Duration::ZERO);
        assert_eq!(delay_of(11), Duration::from_millis(250));
        assert_eq!(delay_of(12), Duration::from_millis(500));
        assert_eq!(delay_of(15), Duration::from_secs(4));
        assert_eq!(delay_of(16), MAX_DELAY);
        assert_eq!(delay_of(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn an_ipv6_client_counts_as_its_64_and_a_mapped_ipv4_as_itself() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a), Source::of(b));
        assert_ne!(Source::of(a), Source::of(c));
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(Source::of(v4), Source::of(mapped));
    }

    #[tokio::test]
    async fn an_address_is_forgotten_after_a_quiet_while_or_the_right_key() {
        let wrong = WrongKeys::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let start = Instant::now();
        for _ in 0..FREE_TRIES {
            assert_eq!(wrong.note(ip, start).0, Duration::ZERO);
        }
        assert_eq!(wrong.note(ip, start).0, FIRST_DELAY);
        assert_eq!(wrong.note(ip, start + FORGET_AFTER).0, Duration::ZERO);
        for _ in 0..FREE_TRIES {
            wrong.note(ip, start + FORGET_AFTER);
        }
        wrong.forgive(ip);
        assert_eq!(wrong.note(ip, start + FORGET_AFTER).0, Duration::ZERO);
    }
}
