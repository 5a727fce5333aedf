#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv that runs the SMTP test server of the
# black-box email tests (tests/fixtures/email/smtp_server.py): aiosmtpd from PyPI for the
# server (STARTTLS, implicit TLS, AUTH) and cryptography for the self-signed certificate
# each test makes. The venv lives outside the clone so `git status` stays clean; it is
# rebuilt when a pin changes. Prints the venv's python path on stdout. Needs python3 >= 3.8
# and PyPI access. .ci/run calls it before the tests; the tests call it themselves when
# the venv is missing (tests/cli/email.rs), so `cargo test` works on a fresh machine too:
# several at once, one building under a lock (scripts/venv.sh), the others waiting for it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PINS="aiosmtpd==1.4.6 cryptography==46.0.7"
VENV="${HERMES_EMAIL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-cron/email-venv}"
# shellcheck source=../venv.sh
. "$HERE/../venv.sh"

ready() {
    [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.pins" 2>/dev/null)" = "$PINS" ] \
        && "$VENV/bin/python" -c 'import aiosmtpd.controller, cryptography.x509' 2>/dev/null
}

build() {
    # shellcheck disable=SC2086 # the pins are separate words
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check $PINS >&2
    "$1/bin/python" -c 'import aiosmtpd.controller, cryptography.x509' >&2
    echo "$PINS" > "$1/.pins"
}

ready || venv_build "$VENV" ready build "$PINS"
echo "$VENV/bin/python"
