//! Black-box tests of the real `hermes` binary: each test gets its own HERMES_HOME in a
//! temp dir, an explicit time zone and a pinned clock, and checks what a user sees —
//! stdout, stderr, the exit code and the files left behind. Named after the behaviour
//! they pin; fixture stores live in `tests/fixtures/`.

#[path = "cli/support.rs"]
mod support;

#[path = "cli/add.rs"]
mod add;
#[path = "cli/agent.rs"]
mod agent;
#[path = "cli/agent_prompt.rs"]
mod agent_prompt;
#[path = "cli/agent_tools.rs"]
mod agent_tools;
#[path = "cli/api.rs"]
mod api;
#[path = "cli/behaviours.rs"]
mod behaviours;
#[path = "cli/beside_python.rs"]
mod beside_python;
#[path = "cli/budgets.rs"]
mod budgets;
#[path = "cli/cancel.rs"]
mod cancel;
#[path = "cli/chains.rs"]
mod chains;
#[path = "cli/channels.rs"]
mod channels;
#[path = "cli/concurrency.rs"]
mod concurrency;
#[path = "cli/daemon.rs"]
mod daemon;
#[path = "cli/dashboard.rs"]
mod dashboard;
#[path = "cli/delivery.rs"]
mod delivery;
#[path = "cli/docs.rs"]
mod docs;
#[path = "cli/doors.rs"]
mod doors;
#[path = "cli/edit.rs"]
mod edit;
#[path = "cli/email.rs"]
mod email;
#[path = "cli/estop.rs"]
mod estop;
#[path = "cli/failover.rs"]
mod failover;
#[path = "cli/first_run.rs"]
mod first_run;
#[path = "cli/hermes022.rs"]
mod hermes022;
#[path = "cli/incidents.rs"]
mod incidents;
#[path = "cli/legacy.rs"]
mod legacy;
#[path = "cli/list.rs"]
mod list;
#[path = "cli/listener.rs"]
mod listener;
#[path = "cli/log_lines.rs"]
mod log_lines;
#[path = "cli/mcp.rs"]
mod mcp;
#[path = "cli/mcp_server.rs"]
mod mcp_server;
#[path = "cli/next.rs"]
mod next;
#[path = "cli/notepad.rs"]
mod notepad;
#[path = "cli/outbound.rs"]
mod outbound;
#[path = "cli/overlap.rs"]
mod overlap;
#[path = "cli/platforms.rs"]
mod platforms;
#[path = "cli/platforms_more.rs"]
mod platforms_more;
#[path = "cli/postgres.rs"]
mod postgres;
#[path = "cli/postgres_tls.rs"]
mod postgres_tls;
#[path = "cli/references.rs"]
mod references;
#[path = "cli/run_window.rs"]
mod run_window;
#[path = "cli/safety.rs"]
mod safety;
#[path = "cli/sandbox.rs"]
mod sandbox;
#[path = "cli/senders.rs"]
mod senders;
#[path = "cli/unreadable.rs"]
mod unreadable;
#[path = "cli/webdriver.rs"]
mod webdriver;
