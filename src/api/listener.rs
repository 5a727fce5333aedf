//! The API's accept loop. A connection must send each request's head within
//! [`HEADER_READ`], and is closed after [`IDLE`] with no request in flight and no byte
//! either way; open connections are capped below the process's file budget
//! (RLIMIT_NOFILE) so the scheduler always has descriptors for its own files, and when
//! the cap is reached the connection idle the longest makes room for the new one. It
//! never reads a request itself: the router does.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long a client has to send a request's head, from the connection's start or the
/// end of the previous response (slow-header attacks hold a descriptor each).
pub const HEADER_READ: Duration = Duration::from_secs(10);
/// How long a connection may stay open with no request in flight and no byte sent or
/// received (uvicorn's keep-alive default, which Python Hermes' server runs on).
pub const IDLE: Duration = Duration::from_secs(5);
/// Descriptors always left to the scheduler (its store, ledger, locks, scripts' pipes,
/// delivery and model connections): at least this many, and at least a quarter of the
/// budget.
const RESERVED_FILES: u64 = 128;
/// The fewest connections served, however small the budget.
const MIN_CONNECTIONS: usize = 16;
/// The most connections served, however large the budget.
const MAX_CONNECTIONS: usize = 65_536;
/// How long requests in flight may finish once the daemon stops.
const DRAIN: Duration = Duration::from_secs(5);

/// The limits one listener keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read: Duration,
    pub idle: Duration,
    /// Open connections at most.
    pub max_connections: usize,
}

impl Limits {
    /// This process's limits: the connection cap from its file budget, lowered to
    /// `configured` (`API_SERVER_MAX_CONNECTIONS`) when that is smaller.
    pub fn for_process(configured: Option<usize>) -> Limits {
        let cap = connection_cap(file_budget());
        Limits {
            header_read: HEADER_READ,
            idle: IDLE,
            max_connections: configured.map_or(cap, |n| n.clamp(1, cap)),
        }
    }
}

/// The soft RLIMIT_NOFILE, or `None` when unlimited.
fn file_budget() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes into the struct it is given.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (read && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// The connections a file budget allows once the scheduler's share is set aside.
pub fn connection_cap(budget: Option<u64>) -> usize {
    let Some(budget) = budget else {
        return MAX_CONNECTIONS;
    };
    let reserve = RESERVED_FILES.max(budget / 4);
    let cap = usize::try_from(budget.saturating_sub(reserve)).unwrap_or(MAX_CONNECTIONS);
    cap.clamp(MIN_CONNECTIONS, MAX_CONNECTIONS)
}

/// One open connection, as the accept loop and the routes see it (a request carries it
/// as an extension).
pub struct Connection {
    id: u64,
    /// When the listener started: activity is counted in milliseconds from it.
    epoch: Instant,
    /// Milliseconds from `epoch` to the last byte read or written.
    last_activity: AtomicU64,
    /// Requests being answered.
    in_flight: AtomicUsize,
    /// Of those, requests held back on purpose (a wrong key's slow-down): they do not
    /// make the connection worth keeping when room is needed.
    held: AtomicUsize,
    /// Notified to close the connection at once (room for a new one).
    close: Notify,
    /// Notified when the last request in flight ends, so the accept loop can wait for
    /// that instead of for a quiet time already past.
    settled: Notify,
}

impl Connection {
    fn touch(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_activity.store(now, Ordering::Relaxed);
    }

    fn last_activity(&self) -> Instant {
        self.epoch + Duration::from_millis(self.last_activity.load(Ordering::Relaxed))
    }

    /// No request is being worked on (held ones do not count).
    fn evictable(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) <= self.held.load(Ordering::Relaxed)
    }

    /// Marks a request of this connection as held back on purpose until the guard is
    /// dropped: the connection may then be closed to make room for another.
    pub fn hold(self: &Arc<Self>) -> Held {
        self.held.fetch_add(1, Ordering::Relaxed);
        Held(Arc::clone(self))
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(Arc::clone(self))
    }
}

/// A request held back; see [`Connection::hold`].
pub struct Held(Arc<Connection>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request being answered.
struct InFlight(Arc<Connection>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        if self.0.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            // A permit is kept if no one waits yet: the next wait returns at once.
            self.0.settled.notify_one();
        }
    }
}

/// The open connections.
struct Open {
    epoch: Instant,
    next_id: AtomicU64,
    /// Every open connection by id. Taken on accept and when a connection ends, never
    /// while awaiting.
    connections: Mutex<HashMap<u64, Arc<Connection>>>,
    /// When the listener last waited for a busy connection to end, so that is logged at
    /// most once a minute.
    full_logged: Mutex<Option<Instant>>,
}

impl Open {
    fn new() -> Open {
        Open {
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            connections: Mutex::new(HashMap::new()),
            full_logged: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
        self.connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Asks the connection idle the longest (or one whose only request is held back)
    /// to close; false when every open connection is busy with a request.
    fn evict_idlest(&self) -> bool {
        let mut open = self.lock();
        let idlest = open
            .values()
            .filter(|c| c.evictable())
            .min_by_key(|c| c.last_activity.load(Ordering::Relaxed))
            .map(|c| c.id);
        match idlest.and_then(|id| open.remove(&id)) {
            Some(evicted) => {
                evicted.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Registers a connection just accepted.
    fn register(&self) -> Arc<Connection> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            id,
            epoch: self.epoch,
            last_activity: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            close: Notify::new(),
            settled: Notify::new(),
        });
        connection.touch();
        self.lock().insert(id, Arc::clone(&connection));
        connection
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn log_full(&self, max: usize) {
        let mut logged = self
            .full_logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if logged.is_none_or(|at| at.elapsed() > Duration::from_secs(60)) {
            *logged = Some(Instant::now());
            tracing::warn!(
                "all {max} API connections are busy with requests; new ones wait until one ends (the cap keeps descriptors for the scheduler; raise RLIMIT_NOFILE to serve more)"
            );
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes; then requests in flight get
/// [`DRAIN`] to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let open = Arc::new(Open::new());
    // One slot per connection, held until its socket is closed: a connection is
    // accepted only into a free slot, so the descriptors in use never pass the cap,
    // even while a burst is being made room for.
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !open.evict_idlest() {
                    open.log_full(limits.max_connections);
                }
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break, // never closed
                    },
                    Some(_) = connections.join_next() => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, address) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (the rest of the process took them) or a
                    // connection reset before it was accepted: try again shortly.
                    tracing::debug!("the API could not accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next() => continue,
            () = &mut shutdown => break,
        };
        let connection = open.register();
        connections.spawn(serve_connection(
            stream,
            address,
            router.clone(),
            (connection, slot),
            Arc::clone(&open),
            limits,
            stopping.clone(),
        ));
    }
    let _ = stop.send(true);
    let _ = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// Serves one connection until it ends, goes quiet, is closed for room or the listener
/// stops. `slot` is released last, after the socket is closed.
async fn serve_connection(
    stream: TcpStream,
    address: SocketAddr,
    router: Router,
    (connection, _slot): (Arc<Connection>, OwnedSemaphorePermit),
    open: Arc<Open>,
    limits: Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let io = TokioIo::new(Watched {
        stream,
        connection: Arc::clone(&connection),
    });
    let service = PerConnection {
        router,
        connection: Arc::clone(&connection),
        address,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    let mut draining = false;
    loop {
        let quiet_until = connection.last_activity() + limits.idle;
        // A request in flight (a wrong key held back, a slow body) keeps the connection
        // open however long it takes: wait for it to end rather than for a quiet time
        // that may already be past, which would wake this loop again at once.
        let busy = connection.in_flight.load(Ordering::Relaxed) > 0;
        tokio::select! {
            _ = &mut served => break,
            () = connection.close.notified() => break,
            () = connection.settled.notified(), if busy => {}
            () = tokio::time::sleep_until(quiet_until), if !busy => {
                let idle = connection.in_flight.load(Ordering::Relaxed) == 0;
                if idle && connection.last_activity() + limits.idle <= Instant::now() {
                    break;
                }
            }
            _ = stopping.changed(), if !draining => {
                draining = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
    open.remove(connection.id);
    // The connection (and its socket) is a local, dropped before the parameters: the
    // slot goes back only once the descriptor is closed.
}

/// The router for one connection's requests: each gets the client's address and its
/// connection as extensions, and counts as in flight until its response is ready.
#[derive(Clone)]
struct PerConnection {
    router: Router,
    connection: Arc<Connection>,
    address: SocketAddr,
}

impl hyper::service::Service<hyper::Request<Incoming>> for PerConnection {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.address));
        request
            .extensions_mut()
            .insert(Arc::clone(&self.connection));
        let in_flight = self.connection.begin();
        let mut router = self.router.clone();
        Box::pin(async move {
            // A Router is always ready: no poll_ready needed before call.
            let response = tower_service::Service::call(&mut router, request).await;
            drop(in_flight);
            response
        })
    }
}

/// A client's socket that notes when a byte last went either way.
struct Watched {
    stream: TcpStream,
    connection: Arc<Connection>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.connection.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.connection.touch();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_scheduler_a_quarter_of_the_budget_and_at_least_128() {
        assert_eq!(connection_cap(Some(20_000)), 15_000);
        assert_eq!(connection_cap(Some(1024)), 768);
        assert_eq!(connection_cap(Some(256)), 128);
        assert_eq!(connection_cap(Some(100)), MIN_CONNECTIONS);
        assert_eq!(connection_cap(None), MAX_CONNECTIONS);
    }

    #[tokio::test]
    async fn room_is_made_by_closing_the_idlest_connection_and_never_a_busy_one() {
        let open = Open::new();
        let first = open.register();
        let second = open.register();
        let _busy = second.begin();
        // The first is idle: it is the one asked to close.
        assert!(open.evict_idlest());
        assert!(!open.lock().contains_key(&first.id));
        // Only a busy one is left: no room.
        assert!(!open.evict_idlest());
        // A held request does not make its connection busy.
        let _held = second.hold();
        assert!(open.evict_idlest());
        assert!(open.lock().is_empty());
    }
}
