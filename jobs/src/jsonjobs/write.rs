//! Writing: the canonical rendering of a document and the atomic write (temp file,
//! fsync, rename, fsync of the directory) every file of a store is written with.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::{io_error, DocumentError, StoreDocument};

/// Serialize: pretty-printed, 2-space indent, UTF-8 written literally (no \uXXXX escapes for CJK/emoji), keys "jobs" then "updated_at" then the extra keys, trailing newline.
///
/// `updated_at` is omitted when it is `None`; [`JsonFile::update`] always sets it.
pub fn render_document(doc: &StoreDocument) -> Vec<u8> {
    // Serialized straight from the borrowed records: a store of 100,000 jobs is ~100 MB
    // of JSON and about ten times that as maps, so a cloned copy would double the peak.
    let extra: Vec<(&str, &Value)> = doc
        .extra
        .iter()
        .filter(|(key, _)| *key != "jobs" && *key != "updated_at")
        .map(|(key, value)| (key.as_str(), value))
        .collect();
    // Maps with string keys, finite numbers and a Vec writer: serializing cannot fail; an
    // empty fallback would risk writing an empty store, so fail loudly.
    render(
        &doc.jobs,
        doc.updated_at.as_deref(),
        &extra,
        doc.jobs.len() * 1024 + 64,
    )
    .expect("serializing JSON maps into memory cannot fail")
}

/// The one rendering of jobs.json, for a whole document and for a change of a few jobs
/// (whose other jobs are their stored text): pretty-printed, keys `jobs`, then
/// `updated_at` when given, then the other top-level keys in order, trailing newline.
pub(super) fn render<J: Serialize + ?Sized, V: Serialize>(
    jobs: &J,
    updated_at: Option<&str>,
    extra: &[(&str, V)],
    capacity: usize,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    serde_json::to_writer_pretty(
        &mut out,
        &Top {
            jobs,
            updated_at,
            extra,
        },
    )?;
    out.push(b'\n');
    Ok(out)
}

/// The top level of jobs.json, borrowed for serializing.
struct Top<'a, J: ?Sized, V> {
    jobs: &'a J,
    updated_at: Option<&'a str>,
    extra: &'a [(&'a str, V)],
}

impl<J: Serialize + ?Sized, V: Serialize> Serialize for Top<'_, J, V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jobs", self.jobs)?;
        if let Some(updated_at) = self.updated_at {
            map.serialize_entry("updated_at", updated_at)?;
        }
        for (key, value) in self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Write bytes atomically: temp file in the same directory, write, flush, fsync, chmod 0600, rename over target, fsync the directory. Creates the parent dir with mode 0700 if missing. Used also for output documents later.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    write_atomic_sweeping(path, bytes, Leftovers::Stale)
}

/// [`write_atomic`] by a caller holding the lock that every writer of `path` takes
/// (jobs.json under `.jobs.lock`): no other write of it can be under way, so every temp
/// file of it still there is a killed writer's, whatever its age, and goes.
pub(super) fn write_atomic_locked(path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    write_atomic_sweeping(path, bytes, Leftovers::All)
}

/// Which temp files of earlier writes a write removes after its own rename.
#[derive(Clone, Copy)]
enum Leftovers {
    /// Only those older than [`STALE_TEMP`]: a younger one may be a write under way.
    Stale,
    /// All of them: the caller holds the writers' lock.
    All,
}

fn write_atomic_sweeping(
    path: &Path,
    bytes: &[u8],
    leftovers: Leftovers,
) -> Result<(), DocumentError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io_error(
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"),
        )
    })?;
    create_private_dir_if_missing(parent)?;

    let tmp_path = parent.join(format!(
        ".{}.tmp-{}-{:016x}",
        name.to_string_lossy(),
        std::process::id(),
        rand::random::<u64>()
    ));
    let written = write_and_sync_new_file(&tmp_path, bytes)
        .and_then(|()| fs::rename(&tmp_path, path).map_err(|e| io_error(path, e)));
    if let Err(e) = written {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    remove_leftover_temps(parent, &name.to_string_lossy(), path, leftovers);
    sync_dir(parent)
}

/// How old a temp file of a write must be, next to the file just written, before it is
/// taken for the leftover of a crashed writer: no healthy write takes this long.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the temp files of earlier writes of `name` that a crash left behind (a kill
/// between create and rename). Unless the caller holds the writers' lock, their age is
/// read against the file just written, by the file system's own clock; a temp of a write
/// still under way is young and stays.
fn remove_leftover_temps(parent: &Path, name: &str, written: &Path, leftovers: Leftovers) {
    let Ok(written_at) = fs::metadata(written).and_then(|m| m.modified()) else {
        return;
    };
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.tmp-");
    for entry in entries.flatten() {
        let is_temp = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix));
        let stale = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| written_at.duration_since(at).ok())
                .is_some_and(|age| age >= STALE_TEMP)
        };
        if is_temp && (matches!(leftovers, Leftovers::All) || stale()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn write_and_sync_new_file(tmp_path: &Path, bytes: &[u8]) -> Result<(), DocumentError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let err = |e| io_error(tmp_path, e);
    let mut file = options.open(tmp_path).map_err(err)?;
    file.write_all(bytes).map_err(err)?;
    file.flush().map_err(err)?;
    file.sync_all().map_err(err)?;
    // The mode given at open is filtered through the umask; set it exactly.
    set_mode(tmp_path, 0o600).map_err(err)
}

/// Make the rename durable. Some filesystems cannot fsync a directory at all; the rename
/// has already happened there, so that is not worth failing the write for.
fn sync_dir(dir: &Path) -> Result<(), DocumentError> {
    #[cfg(unix)]
    {
        let result = File::open(dir).and_then(|d| d.sync_all());
        match result {
            Err(e)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                return Err(io_error(dir, e));
            }
            _ => {}
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Create `dir` (and missing parents) with mode 0700 when it does not exist.
pub(super) fn create_private_dir_if_missing(dir: &Path) -> Result<(), DocumentError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| io_error(dir, e))?;
    set_mode(dir, 0o700).map_err(|e| io_error(dir, e))
}

#[cfg(unix)]
pub(super) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
pub(super) fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}
