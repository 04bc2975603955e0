# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# The correctness run over the plugin's IB device on softverbs, when it is
# built and a fixture host has an RDMA device. Sourced by run.sh.

# The fixture host: DIAG_GPU_SOFTVERBS_HOST, else the first with an RDMA device.
softverbs_host() {
  local h
  if [ -n "${DIAG_GPU_SOFTVERBS_HOST:-}" ]; then printf '%s\n' "$DIAG_GPU_SOFTVERBS_HOST"; return; fi
  for h in "$top"/tests/fixtures/hosts/*/; do
    [ -d "$h/sysfs/class/infiniband" ] && { printf '%s\n' "${h%/}"; return; }
  done
}

# The plugin is asked first (nccl-net-diag selftest) whether it offers an
# RDMA device there, so a missing device is a skip, not an NCCL failure.
softverbs_run() { # name host lib tool
  local sv_name=$1 sv_host=$2 sv_lib=$3 sv_tool=$4 sv_extra sv_env sv_probe
  # DIAG_GPU_SOFTVERBS_ENV: extra VAR=VALUE words softverbs may need.
  read -r -a sv_extra <<<"${DIAG_GPU_SOFTVERBS_ENV:-}"
  sv_env=(NCCL_DIAG_IBVERBS_LIB="$sv_lib" NCCL_DIAG_SYSFS_ROOT="$sv_host/sysfs" "${sv_extra[@]}")
  sv_probe=$(env "${sv_env[@]}" NCCL_DEBUG=INFO "$sv_tool" selftest --size 4096 --iters 1 \
    --plugin "$plugin" 2>&1)
  if ! grep -qE 'using .*/RDMA' <<<"$sv_probe"; then
    skip "$sv_name" "the plugin offers no RDMA device over softverbs on $(basename "$sv_host")"
    grep -E 'WARN|using|devices' <<<"$sv_probe" | head -n 5 | diag
    return
  fi
  run_pair softverbs "${plugin_env[@]}" "${sv_env[@]}" -- "${size_args[@]}"
  relay_tap softverbs
  check_logs softverbs diag 1 "$abi"
  if grep -qE 'NET/diag.*using .*/RDMA' "$out/softverbs/nccl.rank0.log"; then
    ok "softverbs: NCCL drove the plugin's RDMA device"
  else
    notok "softverbs: NCCL drove the plugin's RDMA device"
  fi
}

step_softverbs() {
  local sv_name="softverbs: the correctness run over the plugin's IB device"
  local sv_lib=$build_dir/tests/softverbs/libibverbs.so.1 sv_tool=$build_dir/tools/nccl-net-diag
  local sv_host
  if [ "$do_softverbs" = 0 ]; then
    skip "$sv_name" "--skip-softverbs"
  elif [ ! -e "$sv_lib" ]; then
    skip "$sv_name" "softverbs is not built ($sv_lib): the IB transport has not landed"
  elif [ ! -x "$sv_tool" ]; then
    skip "$sv_name" "no $sv_tool to ask the plugin for its devices"
  else
    sv_host=$(softverbs_host)
    if [ -z "$sv_host" ]; then
      skip "$sv_name" "no fixture host with an RDMA device (set DIAG_GPU_SOFTVERBS_HOST)"
    else
      softverbs_run "$sv_name" "$sv_host" "$sv_lib" "$sv_tool"
    fi
  fi
}
