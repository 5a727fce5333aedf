//! Every process takes `.jobs.lock` for its read-modify-write (docs/STORE.md, "Locks and atomic writes"): concurrent
//! `add`s never lose a job.

use std::collections::HashSet;
use std::sync::Arc;

use crate::support::{created_id, Hermes};

#[test]
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
