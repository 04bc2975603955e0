# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# The steps of a run before the transfers: is there a GPU, which NCCL, does
# the rank program run and does the plugin load. Sourced by run.sh; each
# step that cannot go on ends the run through finish.

# Sets gpu_why when there is none. With a mock, only the rank program's
# probe decides (the test double answers as a GPU would).
have_gpu() {
  local l
  if [ "$mock" = 0 ]; then
    if command -v nvidia-smi >/dev/null 2>&1; then
      l=$(nvidia-smi -L 2>&1)
      if grep -q '^GPU [0-9]' <<<"$l"; then
        echo "$l" | diag
        # Two processes must be able to share the GPU: compute mode Default.
        nvidia-smi --query-gpu=index,compute_mode,driver_version --format=csv,noheader 2>&1 | diag
        return 0
      fi
      gpu_why="nvidia-smi -L: $(head -n1 <<<"$l")"
    else
      gpu_why="no nvidia-smi on PATH"
    fi
    find_nccl && export LD_LIBRARY_PATH="$nccl_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -x "$bin" ]; then
    l=$("$bin" probe 2>&1) && return 0
    gpu_why="${gpu_why:+$gpu_why; }nccl_e2e probe: $(tail -n1 <<<"$l")"
  fi
  return 1
}

# NCCL first on LD_LIBRARY_PATH, and the rank program built here when it
# was not carried (this sets bin and may extend LD_LIBRARY_PATH).
step_nccl() {
  if [ -z "$nccl_lib_dir" ] && ! find_nccl; then
    notok "NCCL found (libnccl.so.2)"
    echo "# looked in: ${looked[*]} (and ldconfig -p, python3 nvidia.nccl); set NCCL_HOME"
    finish
  fi
  ok "NCCL found: $nccl_lib_dir/libnccl.so.2"
  echo "# looked in order: ${looked[*]}"
  case ":${LD_LIBRARY_PATH:-}:" in *":$nccl_lib_dir:"*) ;;
    *) export LD_LIBRARY_PATH="$nccl_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
  if [ ! -x "$bin" ]; then
    if build_rank_program >"$out/build-rank-program.log"; then
      ok "rank program built here: $bin"
      diag <"$out/build-rank-program.log"
    else
      notok "rank program built here"
      diag <"$out/build-rank-program.log"
      finish
    fi
  fi
}

# Sets nccl_code and abi: the ABI version the NCCL that runs should bind.
step_probe() {
  local probe
  if probe=$("$bin" probe 2>&1); then
    ok "rank program runs with this NCCL and sees a GPU"
    echo "$probe" | diag
  else
    notok "rank program runs with this NCCL and sees a GPU"
    echo "$probe" | diag
    finish
  fi
  nccl_code=$(sed -n -E 's/.*\(code ([0-9]+)\).*/\1/p' <<<"$probe" | head -n1)
  abi=$(expected_abi "${nccl_code:-0}")
  echo "# NCCL version code $nccl_code: a plugin exporting v5..v12 is bound through v$abi"
}

# A plugin that does not load as built would only make NCCL fall back.
step_dlopen() {
  local msg
  if msg=$("$bin" dlopen "$plugin" 2>&1); then
    ok "plugin loads on this host as built (dlopen RTLD_NOW): $plugin"
    echo "$msg" | diag
    if command -v ldd >/dev/null 2>&1; then ldd "$plugin" 2>&1 | diag; fi
  else
    notok "plugin loads on this host as built (dlopen RTLD_NOW): $plugin"
    echo "$msg" | diag
    finish
  fi
}

# A private daemon (pipe and log folders under $out), stopped at exit.
step_mps() {
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1' EXIT
      ok "private MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
    else
      notok "private MPS daemon started"
    fi
  else
    notok "private MPS daemon started (no nvidia-cuda-mps-control on PATH)"
  fi
}

# Every collective through the plugin, checked element by element.
step_checks() {
  run_pair check "${plugin_env[@]}" -- "${size_args[@]}"
  relay_tap check
  check_logs check diag 1 "$abi"
}
