//! `hermes cron service install|uninstall|start|stop|restart`: the scheduler as a systemd
//! user service, `hermes-cron` (with the profile or a hash of the home appended for other
//! homes, as Python Hermes names its gateway units) — never `hermes-gateway`, which is
//! Python Hermes' chat gateway. Where no systemd user manager answers, install prints the
//! unit and the path it belongs at instead of writing anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::error::CliError;
use crate::cli::GatewayAction;
use crate::home::Home;

/// Python Hermes' naming rule with our name: `hermes-cron` for `~/.hermes` (the unit the
/// Debian package and `examples/hermes-cron.service` install), `hermes-cron-<profile>`
/// for `<root>/profiles/<profile>`, else a short hash of the home.
fn service_name(home: &Path) -> String {
    let default = std::env::var_os("HOME").map(|h| Path::new(&h).join(".hermes"));
    if default.as_deref() == Some(home) {
        return "hermes-cron".to_string();
    }
    let profile = home
        .parent()
        .filter(|parent| parent.file_name().is_some_and(|n| n == "profiles"))
        .and(home.file_name());
    match profile {
        Some(name) => format!("hermes-cron-{}", name.to_string_lossy()),
        None => {
            let hash = Sha256::digest(home.as_os_str().as_encoded_bytes());
            format!("hermes-cron-{}", &hex::encode(hash)[..8])
        }
    }
}

fn unit_path(name: &str) -> Result<PathBuf, CliError> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))
        .ok_or_else(|| CliError::user("Cannot find your home directory: set HOME"))?;
    Ok(config.join("systemd/user").join(format!("{name}.service")))
}

fn unit_text(home: &Path) -> Result<String, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::internal(format!("cannot find the hermes binary: {e}")))?;
    Ok(format!(
        "[Unit]\nDescription=hermes-cron scheduler (Hermes agent scheduled jobs)\n\
         After=network-online.target\n\n[Service]\nType=simple\n\
         ExecStart={} cron daemon\nEnvironment=HERMES_HOME={}\nRestart=on-failure\n\
         RestartSec=5\n# SIGTERM lets running jobs finish for up to 30 s.\n\
         TimeoutStopSec=40\nKillMode=mixed\n\n[Install]\nWantedBy=default.target\n",
        exe.display(),
        home.display()
    ))
}

/// `systemctl --user ARGS`; `None` when there is no systemctl or no user manager.
fn systemctl(args: &[&str]) -> Option<bool> {
    let reachable = Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    if !reachable {
        return None;
    }
    Command::new("systemctl")
        .arg("--user")
        .args(args)
        .status()
        .ok()
        .map(|status| status.success())
}

pub fn service(action: GatewayAction, home: &Home) -> Result<(), CliError> {
    let name = service_name(&home.root);
    let path = unit_path(&name)?;
    match action {
        GatewayAction::Install => install(&name, &path, home),
        GatewayAction::Uninstall => {
            let _ = systemctl(&["disable", "--now", &name]);
            match std::fs::remove_file(&path) {
                Ok(()) => say!("Removed {}", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    say!("No unit at {}; nothing to remove", path.display())
                }
                Err(e) => {
                    return Err(CliError::internal(format!(
                        "cannot remove {}: {e}",
                        path.display()
                    )))
                }
            }
            let _ = systemctl(&["daemon-reload"]);
            Ok(())
        }
        GatewayAction::Start | GatewayAction::Stop | GatewayAction::Restart => {
            let verb = match action {
                GatewayAction::Start => "start",
                GatewayAction::Stop => "stop",
                _ => "restart",
            };
            match systemctl(&[verb, &name]) {
                Some(true) => {
                    say!("{verb}: {name}");
                    Ok(())
                }
                Some(false) => Err(CliError::user(format!(
                    "systemctl --user {verb} {name} failed; see 'journalctl --user -u {name}' (installed with 'hermes cron service install'?)"
                ))),
                None => Err(CliError::user(format!(
                    "No systemd user manager here, so there is no {name} service to {verb}: run 'hermes cron daemon' in the foreground or under your own supervisor"
                ))),
            }
        }
        GatewayAction::Run | GatewayAction::Status => Ok(()),
    }
}

fn install(name: &str, path: &Path, home: &Home) -> Result<(), CliError> {
    let unit = unit_text(&home.root)?;
    if systemctl(&["daemon-reload"]).is_none() {
        say!(
            "No systemd user manager here; this unit belongs at {}:\n",
            path.display()
        );
        say!("{unit}");
        say!("Or run the scheduler yourself: hermes cron daemon");
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, &unit)
        .map_err(|e| CliError::internal(format!("cannot write {}: {e}", path.display())))?;
    retire_old_unit(name);
    let enabled = systemctl(&["daemon-reload"]) == Some(true)
        && systemctl(&["enable", "--now", name]) == Some(true);
    if !enabled {
        return Err(CliError::user(format!(
            "Wrote {} but systemctl could not enable it: see 'systemctl --user status {name}'",
            path.display()
        )));
    }
    say!("Installed and started {name} ({})", path.display());
    say!(
        "Logs: journalctl --user -u {name} -f; keep it after logout: loginctl enable-linger $USER"
    );
    Ok(())
}

/// Earlier releases named this program's unit `hermes-gateway…`, the name of Python
/// Hermes' own gateway unit. Installing the new one disables and removes the old one
/// when its description says it is ours; a Python Hermes unit is never touched.
fn retire_old_unit(name: &str) {
    let old = name.replacen("hermes-cron", "hermes-gateway", 1);
    let Ok(path) = unit_path(&old) else {
        return;
    };
    let ours = std::fs::read_to_string(&path)
        .is_ok_and(|text| text.contains("Description=hermes-cron scheduler"));
    if ours {
        let _ = systemctl(&["disable", "--now", &old]);
        if std::fs::remove_file(&path).is_ok() {
            say!(
                "Removed the old unit {old} ({}), replaced by {name}",
                path.display()
            );
        }
    }
}
