# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # globals that run.sh sets before sourcing this
# Finding NCCL and the CUDA runtime on the GPU host, and building the rank
# program there when it was not carried. Sourced by run.sh; sets
# nccl_lib_dir, nccl_inc_dir (and, for the build, cudart, cudart_inc and bin).

nccl_lib_dir="" nccl_inc_dir="" cudart="" cudart_inc="" looked=()
cuda_roots() {
  local nv
  {
    nv=$(command -v nvcc 2>/dev/null) && dirname "$(dirname "$nv")"
    echo /usr/local/cuda
  } | awk '!seen[$0]++'
}
python_pkg_dir() { # nvidia.<name> from a pip wheel (PyTorch ships NCCL this way)
  command -v python3 >/dev/null 2>&1 || return 1
  python3 - "$1" 2>/dev/null <<'PY'
import importlib.util, sys
try:
    s = importlib.util.find_spec("nvidia." + sys.argv[1])
except Exception:
    s = None
if s and s.submodule_search_locations:
    print(list(s.submodule_search_locations)[0])
PY
}
# The first folder with libnccl.so.2 wins, in the order the README documents;
# nccl.h is taken beside it, else from the first candidate that has one.
find_nccl() {
  local pairs=() root l arch d
  arch=$(uname -m)-linux
  [ -n "${NCCL_HOME:-}" ] && pairs+=("$NCCL_HOME/lib:$NCCL_HOME/include" "$NCCL_HOME/lib64:$NCCL_HOME/include")
  while read -r root; do
    pairs+=("$root/lib64:$root/include" "$root/lib:$root/include"
            "$root/targets/$arch/lib:$root/targets/$arch/include")
  done < <(cuda_roots)
  l=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [ -n "$l" ] && pairs+=("$(dirname "$l"):$(dirname "$(dirname "$l")")/include")
  d=$(python_pkg_dir nccl) && [ -n "$d" ] && pairs+=("$d/lib:$d/include")
  for p in "${pairs[@]}"; do
    looked+=("${p%%:*}")
    if [ -z "$nccl_lib_dir" ] && [ -e "${p%%:*}/libnccl.so.2" ]; then
      nccl_lib_dir=${p%%:*}
      [ -e "${p#*:}/nccl.h" ] && nccl_inc_dir=${p#*:}
    fi
    [ -z "$nccl_inc_dir" ] && [ -e "${p#*:}/nccl.h" ] && nccl_inc_dir=${p#*:}
  done
  [ -n "$nccl_lib_dir" ]
}
find_cudart() { # for building the rank program on the GPU host itself
  local dirs=() root d sub
  while read -r root; do
    dirs+=("$root/lib64:$root/include" "$root/lib:$root/include"
           "$root/targets/$(uname -m)-linux/lib:$root/targets/$(uname -m)-linux/include")
  done < <(cuda_roots)
  for sub in cu13 cuda_runtime; do
    d=$(python_pkg_dir "$sub") && [ -n "$d" ] && dirs+=("$d/lib:$d/include")
  done
  for p in "${dirs[@]}"; do
    [ -e "${p#*:}/cuda_runtime_api.h" ] || continue
    for f in "${p%%:*}/libcudart_static.a" "${p%%:*}"/libcudart.so.[0-9]*; do
      [ -e "$f" ] || continue
      cudart=$f cudart_inc=${p#*:}
      return 0
    done
  done
  return 1
}
# The same files meson builds (tests/gpu/meson.build: e2e_src).
build_rank_program() {
  local cc=${CC:-} c src=("$here/nccl_e2e.c" "$here"/e2e_*.c)
  for c in cc gcc clang; do [ -z "$cc" ] && command -v $c >/dev/null 2>&1 && cc=$c; done
  [ -n "$cc" ] || { echo "no C compiler here: build it with meson where one is and carry it"; return 1; }
  [ -n "$nccl_inc_dir" ] || { echo "no nccl.h found in: ${looked[*]}"; return 1; }
  find_cudart || { echo "no CUDA runtime (cuda_runtime_api.h with libcudart) found"; return 1; }
  case $cudart in *.so*) LD_LIBRARY_PATH="${cudart%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                         export LD_LIBRARY_PATH ;; esac
  bin=$out/nccl_e2e
  echo "$cc -std=c11 -O2 -D_GNU_SOURCE -I$nccl_inc_dir -I$cudart_inc nccl_e2e.c e2e_*.c -l:libnccl.so.2 $cudart"
  "$cc" -std=c11 -O2 -D_GNU_SOURCE -I"$nccl_inc_dir" -I"$cudart_inc" "${src[@]}" -o "$bin" \
    -L"$nccl_lib_dir" -l:libnccl.so.2 "$cudart" -ldl -lrt -lpthread 2>&1
}
