# SPDX-License-Identifier: Apache-2.0
# Sourced by the guest scripts: runs the two sides of a connection
# (rxe_peer) and checks what each side logged and how it ended.
#
#   pair NAME "LISTENER ENV" "CONNECTOR ENV" [rxe_peer options...]
#     runs both, the listener first; the side's outputs land in
#     $RXE_OUT/scen/NAME.listen and NAME.connect; HOOK (a shell command, when
#     set) runs once both plugins have read their devices and chosen their
#     GIDs, before the connection starts: the moment to break something
#     under them.
#   expect SIDE WHAT TEXT...   (SIDE: listen, connect or both)
#     WHAT: warn (a WARN holds every TEXT), nowarn (no WARN holds TEXT),
#     result (a RESULT line holds TEXT), info (an INFO holds every TEXT)
#   verdict NAME   one TAP case: ok when every expect held
peer=$BUILD/tests/rxe/rxe_peer
mkdir -p "$RXE_OUT/scen"
problems=()

pair() { # name listener-env connector-env [options...]
  local name=$1 lenv=$2 cenv=$3 dir=/tmp/scen-$1
  shift 3
  problems=()
  scen=$RXE_OUT/scen/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  local t0=$(date +%s%N)
  env $lenv "$peer" listen "$dir" "$@" >"$scen.listen" 2>&1 &
  local pl=$!
  local i
  for i in $(seq 200); do [ -f "$dir/handle" ] && break; sleep 0.05; done
  if [ -z "${HOOK:-}" ]; then
    env $cenv "$peer" connect "$dir" "$@" >"$scen.connect" 2>&1
  else
    env $cenv "$peer" connect "$dir" "$@" --gate 1 >"$scen.connect" 2>&1 &
    local pc=$!
    for i in $(seq 200); do [ -f "$dir/gate-ready" ] && break; sleep 0.05; done
    eval "$HOOK" >>"$scen.hook" 2>&1
    echo g >"$dir/gate-go"
    wait $pc
  fi
  wait $pl
  elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
  local side
  for side in listen connect; do
    grep -q '^RESULT hang' "$scen.$side" && problems+=("the $side side hung")
    grep -q '^RESULT exit' "$scen.$side" || problems+=("the $side side did not finish")
  done
  return 0
}

# The plugin cuts a long diagnosis for NCCL's line buffer; a line that
# continues the one before ("LOG WARN NET/diag ... ") is joined to it.
# Plain bash: the guest has no awk and no /dev/fd.
joined() { # file
  local line prev="" have=0 re='^LOG (WARN|INFO) NET/diag [.][.][.] (.*)$'
  while IFS= read -r line; do
    if [ $have = 1 ] && [[ $line =~ $re ]]; then
      prev+=" ${BASH_REMATCH[2]}"
      continue
    fi
    [ $have = 1 ] && printf '%s\n' "$prev"
    prev=$line have=1
  done <"$1"
  [ $have = 1 ] && printf '%s\n' "$prev"
  return 0
}

expect() { # side what text...
  local sides=$1 what=$2 side t ok line
  shift 2
  [ "$sides" = both ] && sides="listen connect"
  for side in $sides; do
    joined "$scen.$side" >"$scen.$side.joined"
    ok=0
    while IFS= read -r line; do
      case $what in
      warn) [[ $line == "LOG WARN "* ]] || continue ;;
      info) [[ $line == "LOG INFO "* ]] || continue ;;
      result) [[ $line == "RESULT "* ]] || continue ;;
      nowarn) [[ $line == "LOG WARN "* ]] || continue
        [[ $line == *"$1"* ]] && { ok=-1; break; }
        continue ;;
      esac
      ok=1
      for t in "$@"; do [[ $line == *"$t"* ]] || { ok=0; break; }; done
      [ $ok = 1 ] && break
    done <"$scen.$side.joined"
    if [ "$what" = nowarn ]; then
      [ $ok = -1 ] && problems+=("the $side side warned about: $1")
    elif [ $ok != 1 ]; then
      problems+=("the $side side: no $what line with: $*")
    fi
  done
}

verdict() { # name
  local p side
  if [ ${#problems[@]} = 0 ]; then
    echo "ok - $1 (${elapsed_ms} ms)" >>"$tap"
    return
  fi
  {
    echo "not ok - $1 (${elapsed_ms} ms)"
    for p in "${problems[@]}"; do echo "#   $p"; done
    for side in listen connect; do
      echo "#   --- $side side:"
      grep -v '^LOG INFO' "$scen.$side" | cut -c1-1500 | sed 's/^/#     /'
    done
  } >>"$tap"
}
