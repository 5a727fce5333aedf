//! Walks a jobs.json once with the strict scanner and prints how many jobs and keys it
//! saw: `cargo run --release -p jobs --example scan_store -- PATH` (for profiling the
//! scanner alone under callgrind).
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: scan_store PATH");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    let (mut jobs, mut keys) = (0usize, 0usize);
    let walked = jobs::jsonscan::walk_jobs(&bytes, &mut |_, entries| {
        jobs += 1;
        keys += entries.len();
        jobs::jsonscan::Walk::Continue
    });
    println!(
        "canonical: {}, jobs: {jobs}, keys: {keys}",
        walked.is_some()
    );
}
