//! `hermes cron sandbox explain JOB [--json]`: the effective policy of a job's runs
//! (level and where it comes from, writable and hidden paths, network, limits, which
//! scripts are confined) and what this kernel supports.

use std::path::Path;

use serde_json::{json, Value};

use super::{exec, hidden_paths, level_of, private_workdir, Level, Limits, Support};
use crate::config::Config;

/// The policy of `job`'s runs for the home `home`, as JSON (what `--json` prints).
pub fn describe(job: &jobs::Job, config: &Config, home: &Path) -> Result<Value, String> {
    let level = level_of(job, config)?;
    let source = if job.sandbox().is_some() {
        "the job's sandbox field"
    } else if config
        .cron
        .sandbox
        .as_deref()
        .is_some_and(|v| !v.trim().is_empty())
    {
        "cron.sandbox in config.yaml"
    } else {
        "the default"
    };
    let support = Support::probe();
    let kernel = json!({
        "landlock_abi": support.landlock_abi,
        "seccomp": support.seccomp,
        "process_cgroup": exec::pids_cgroup_available(),
        "missing": support.missing(),
    });
    if level == Level::Off {
        return Ok(json!({
            "job": job.id(),
            "level": level.name(),
            "source": source,
            "confined": false,
            "note": "runs unconfined: tools and scripts see and may change everything the scheduler's user can",
            "kernel": kernel,
        }));
    }
    let workdir = match job.workdir() {
        Some(dir) => Path::new(dir).to_path_buf(),
        None => private_workdir(job.id()),
    };
    let limits = Limits::default();
    Ok(json!({
        "job": job.id(),
        "level": level.name(),
        "source": source,
        "confined": true,
        "writable": [workdir.display().to_string(), "a private temporary directory per call ($TMPDIR)"],
        "read_only": "everything else on the system",
        "hidden": hidden_paths(home).iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "processes": "own PID namespace (the scheduler and other processes are invisible), no capabilities, no_new_privs",
        "network": if level == Level::Strict { "none (own network namespace)" } else { "open" },
        "scripts_confined": level == Level::Strict,
        "seccomp_refuses": ["ptrace", "mount", "bpf", "keyctl", "kexec", "module loading", "perf_event_open", "unshare", "setns", "open_by_handle_at", "io_uring"],
        "limits": {
            "memory_bytes": limits.memory,
            "processes": limits.processes,
            "file_size_bytes": limits.file_size,
            "open_files": limits.open_files,
            "cpu_seconds": limits.cpu_seconds,
        },
        "kernel": kernel,
    }))
}

/// The human-readable form of [`describe`]'s JSON.
pub fn text(policy: &Value) -> String {
    let s = |key: &str| policy[key].as_str().unwrap_or_default().to_string();
    let mut out = vec![format!(
        "Job {}: sandbox {} (from {})",
        s("job"),
        s("level"),
        s("source")
    )];
    if policy["confined"] == false {
        out.push(format!("  {}", s("note")));
    } else {
        let list = |key: &str| {
            policy[key]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        out.push(format!("  Writable:  {}", list("writable")));
        out.push(format!("  Hidden:    {}", list("hidden")));
        out.push(format!("  Read-only: {}", s("read_only")));
        out.push(format!("  Network:   {}", s("network")));
        out.push(format!("  Processes: {}", s("processes")));
        out.push(format!("  Refused:   {}", list("seccomp_refuses")));
        let l = &policy["limits"];
        out.push(format!(
            "  Limits:    memory {} MiB, {} processes, files up to {} MiB, {} open files, {} CPU seconds",
            l["memory_bytes"].as_u64().unwrap_or(0) >> 20,
            l["processes"],
            l["file_size_bytes"].as_u64().unwrap_or(0) >> 20,
            l["open_files"],
            l["cpu_seconds"]
        ));
        out.push(format!(
            "  Scripts:   {}",
            if policy["scripts_confined"] == true {
                "the pre-run and monitor scripts are confined too"
            } else {
                "the pre-run and monitor scripts run unconfined (strict confines them)"
            }
        ));
    }
    let k = &policy["kernel"];
    out.push(format!(
        "  Kernel:    Landlock {}, seccomp {}, process-count cgroup {}",
        k["landlock_abi"]
            .as_u64()
            .map_or("absent".to_string(), |abi| format!("ABI {abi}")),
        if k["seccomp"] == true {
            "yes"
        } else {
            "absent"
        },
        if k["process_cgroup"] == true {
            "yes"
        } else {
            "absent (RLIMIT_NPROC only)"
        },
    ));
    if let Some(missing) = k["missing"].as_str() {
        out.push(format!("  ✗ {missing}"));
    }
    out.join("\n")
}
