# Sourced by the setup scripts of the test venvs (scripts/*/setup.sh): builds a venv once,
# however many callers ask at the same time.
#
#   venv_build VENV READY BUILD WHAT
#
# Takes VENV.lock; if READY (a function that checks $VENV) says another caller finished
# meanwhile, returns. Otherwise creates a fresh venv in a temporary directory beside VENV,
# runs BUILD with its path, and only when BUILD succeeds moves it into place: the console
# scripts pip wrote name their interpreter by the temporary path, so those paths are
# rewritten first. A failed or killed build leaves at most a temporary directory, which the
# next build removes; a finished VENV is never deleted while another caller may use it,
# only replaced by rename once a newer one is complete.
venv_build() {
    local venv="$1" ready="$2" build="$3" what="$4"
    mkdir -p "$(dirname "$venv")"
    exec 9>"$venv.lock"
    flock 9
    if "$ready"; then
        exec 9>&-
        return 0
    fi
    echo "$(basename "$0"): building $venv with $what" >&2
    # Left by a build that was killed: nobody else builds while the lock is held.
    rm -rf "$venv".building-*
    local tmp
    tmp="$(mktemp -d "$venv.building-XXXXXX")"
    chmod 755 "$tmp"
    "${PYTHON:-python3}" -m venv --prompt "$(basename "$venv")" "$tmp" >&2
    "$build" "$tmp"
    # pip's console scripts (bin/hermes, bin/pip...) and activate name the venv's absolute
    # path: point them at the final one before the rename.
    grep -lIF -- "$tmp" "$tmp"/bin/* 2>/dev/null | while IFS= read -r f; do
        sed -i "s|$tmp|$venv|g" "$f"
    done
    if [ -e "$venv" ]; then
        # An outdated or broken venv: move it aside in one rename, then delete it.
        local old="$venv.old-$$"
        mv "$venv" "$old"
        mv "$tmp" "$venv"
        rm -rf "$old"
    else
        mv "$tmp" "$venv"
    fi
    exec 9>&-
}
