//! Every process takes `.jobs.lock` for its read-modify-write (docs/STORE.md, "Locks and atomic writes"): concurrent
//! `add`s never lose a job.

use std::collections::HashSet;
use std::sync::Arc;

use crate::support::{created_id, Hermes};

#[test]
#[ignore = "slow (3-6 s of real time): .ci/run runs it once"]
fn eight_processes_adding_fifteen_jobs_each_keep_all_one_hundred_twenty() {
    let hermes = Arc::new(Hermes::new());
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let hermes = Arc::clone(&hermes);
            std::thread::spawn(move || {
                (0..15)
                    .map(|i| {
                        let prompt = format!("worker {worker} job {i}");
                        let run = hermes.cron(&["add", "every 2h", &prompt]);
                        created_id(run.ok())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let printed: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker thread"))
        .collect();
    assert_eq!(printed.len(), 120);

    let jobs = hermes.jobs();
    assert_eq!(jobs.len(), 120, "jobs were lost");
    let stored: HashSet<&str> = jobs.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(stored.len(), 120, "ids are not distinct");
    let printed: HashSet<&str> = printed.iter().map(String::as_str).collect();
    assert_eq!(stored, printed, "stored ids differ from the printed ones");
    let prompts: HashSet<&str> = jobs.iter().map(|j| j["prompt"].as_str().unwrap()).collect();
    assert_eq!(prompts.len(), 120);

    // Atomic writes leave no temp files behind (the file itself: jobs.json only).
    if !hermes.on_files() {
        return;
    }
    let mut names: Vec<String> = std::fs::read_dir(hermes.cron_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".jobs.lock", "jobs.json"]);
}

/// Fifty API clients creating at once share the daemon's writes of jobs.json (docs/STORE.md,
/// "Group commit") while other processes add through the lock: no job is lost or doubled.
#[test]
fn fifty_api_clients_and_two_processes_adding_at_once_keep_every_job() {
    let hermes = Hermes::new();
    let api = crate::api::serve(&hermes, &[]);
    std::thread::scope(|scope| {
        for client in 0..50 {
            let api = &api;
            scope.spawn(move || {
                for n in 0..4 {
                    let body = serde_json::json!({
                        "name": format!("api {client} {n}"),
                        "schedule": "every 1h",
                        "prompt": "Summarize the news",
                    });
                    let reply = api.send("POST", "/api/jobs", &[], &body.to_string());
                    assert_eq!(reply.status, 200, "{}", reply.body);
                }
            });
        }
        for process in 0..2 {
            let hermes = &hermes;
            scope.spawn(move || {
                for n in 0..5 {
                    let name = format!("cli {process} {n}");
                    hermes.add("every 2h", "Summarize the logs", &["--name", &name]);
                }
            });
        }
    });
    let names: HashSet<String> = hermes
        .jobs()
        .iter()
        .map(|job| job["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 210, "{} distinct names", names.len());
    assert_eq!(hermes.jobs().len(), 210);
}

/// A daemon killed (SIGKILL) while fifty clients create through its grouped writes loses
/// no create it answered and leaves a jobs.json every reader reads whole: a batch is
/// written to a temporary file, synced and renamed before any caller hears of it. The
/// next write removes what the killed one left behind.
#[test]
fn a_daemon_killed_during_grouped_writes_keeps_every_create_it_answered() {
    let hermes = Hermes::new();
    if !hermes.on_files() {
        return; // about jobs.json itself
    }
    let api = crate::api::serve(&hermes, &[]);
    let answered = std::sync::Mutex::new(Vec::<String>::new());
    std::thread::scope(|scope| {
        for client in 0..50 {
            let (api, answered) = (&api, &answered);
            scope.spawn(move || {
                for n in 0.. {
                    let body = serde_json::json!({
                        "name": format!("api {client} {n}"),
                        "schedule": "every 1h",
                        "prompt": "Summarize the news",
                    });
                    match api.try_send("POST", "/api/jobs", &[], &body.to_string()) {
                        Ok(reply) if reply.status == 200 => {
                            let id = reply.json()["job"]["id"].as_str().unwrap().to_string();
                            answered.lock().unwrap().push(id);
                        }
                        _ => break,
                    }
                }
            });
        }
        let started = std::time::Instant::now();
        while answered.lock().unwrap().len() < 300 {
            assert!(started.elapsed() < std::time::Duration::from_secs(60));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        api.kill_now();
    });
    let answered = answered.into_inner().unwrap();
    let stored: Vec<String> = hermes
        .jobs()
        .iter()
        .map(|job| job["id"].as_str().unwrap().to_string())
        .collect();
    let distinct: HashSet<&String> = stored.iter().collect();
    assert_eq!(distinct.len(), stored.len(), "a job stored twice");
    let missing: Vec<&String> = answered
        .iter()
        .filter(|id| !distinct.contains(id))
        .collect();
    assert!(missing.is_empty(), "answered but not stored: {missing:?}");
    assert!(hermes.cron(&["list", "--all"]).ok().contains("api "));
    hermes.add("every 2h", "Summarize the logs", &[]);
    let left: Vec<String> = std::fs::read_dir(hermes.cron_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        // The temp files of jobs.json writes (the daemon's heartbeat files have their own,
        // taken for a dead writer's once stale).
        .filter(|name| name.starts_with(".jobs.json.tmp-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
