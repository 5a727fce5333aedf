#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv that runs the SMTP test server of the
# black-box email tests (tests/fixtures/email/smtp_server.py): aiosmtpd from PyPI for the
# server (STARTTLS, implicit TLS, AUTH) and cryptography for the self-signed certificate
# each test makes. The venv lives outside the clone so `git status` stays clean; it is
# rebuilt when a pin changes. Prints the venv's python path on stdout. Needs python3 >= 3.8
# and PyPI access. .ci/run calls it before the tests; the tests call it themselves when
# the venv is missing (tests/cli/email.rs), so `cargo test` works on a fresh machine too.
set -euo pipefail
PINS="aiosmtpd==1.4.6 cryptography==46.0.7"
VENV="${HERMES_EMAIL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/email-venv}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.pins"

ready() {
    [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PINS" ] \
        && "$VENV/bin/python" -c 'import aiosmtpd.controller, cryptography.x509' 2>/dev/null
}

if ready; then
    echo "$VENV/bin/python"
    exit 0
fi
# Several test binaries may ask at once: one builds, the others wait for it.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ready; then
    echo "$VENV/bin/python"
    exit 0
fi
echo "scripts/email/setup.sh: building $VENV with $PINS" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV" >&2
# shellcheck disable=SC2086 # the pins are separate words
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS >&2
"$VENV/bin/python" -c 'import aiosmtpd.controller, cryptography.x509' >&2
echo "$PINS" > "$STAMP"
echo "$VENV/bin/python"
