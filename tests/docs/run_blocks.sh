#!/usr/bin/env bash
# Runs every command block of README.md and docs/*.md as a user pastes it (docs/testing.md,
# "Command blocks"). A ```sh block is a command block; ```text, ```json, ```csv and ```c blocks are
# not run, and a fence without a language or with another one is refused, so no command hides from
# this test. Blocks run in order per file, each file in a scratch folder of its own (also HOME),
# with BUILD_DIR/tools first on PATH, under `bash -e` and a timeout per block (120 s). A ```sh
# block holds no placeholder (FILE, DIR, ... or a synopsis's `[--flag]` and `...`): real names only.
# A directive on the line right before a fence changes how its block runs (several join with ","):
#   <!-- doc-test: netns B background -->  run in host B of two network namespaces joined by a veth
#   <!-- doc-test: netns A -->             pair named eth1 on both sides (A 10.0.0.1/24, B
#                                          10.0.0.2/24; root; made here, removed after the file,
#                                          also on failure or interrupt). A background block must
#                                          listen on a TCP port within 20 s; it runs until the next
#                                          block of its file ends, and fails if it ends with an error
#   <!-- doc-test: exit 0 3 4 -->          the exit codes the block may end with (a command whose
#                                          documented outcome depends on the measurement)
#   <!-- doc-test: exit 4 without a GPU --> without a GPU (no /proc/driver/nvidia) the block must end
#                                          with that code and its output must name the GPU; with
#                                          one it must pass
#   <!-- doc-test: ci -->                  the test-suite command: not run (it runs this test);
#                                          .ci/run must run each of its commands, with those
#                                          arguments, in the same order
#   <!-- doc-test: repo root -->           run in the source tree (the fresh-machine command), and
#                                          only when BUILD_DIR is its build/; afterwards remove what
#                                          the block added to acceltune-results/ and the git-ignored
#                                          entries it added at the top
#   <!-- doc-test: file NAME -->           (on a ```json or ```csv block) write it to NAME in the
#                                          scratch folder, for the blocks after it
#   <!-- doc-test: timeout SECONDS -->     another timeout for the block
#
# Usage: run_blocks.sh BUILD_DIR [FILE.md ...]   (default: README.md and docs/*.md)
#        run_blocks.sh --list [FILE.md ...]      the blocks that run and their directives
#        run_blocks.sh --self-test               shows the runner fails: a failing block fails, a
#                                                passing one passes, a ```text block is not run
# Prints each block's file:line, its time and result, and for a failure the block, its output's
# tail and its exit code. Exit 0 every block passed; 1 a block failed or a file broke the rules;
# 2 bad usage; 77 nothing failed but some blocks could not run here (not root, or another build
# folder than the source tree's build/), each named with the reason.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
block_timeout=120
tail_lines=40

usage() { sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run_blocks: $*" >&2; exit 2; }

# ---- the blocks of one markdown file -------------------------------------------------------
# Writes each fenced block's text to $2/N.body and prints "N<TAB>line<TAB>lang<TAB>directives" per
# block; a rule broken prints "ERROR<TAB>line<TAB>message" instead.
extract() {
  awk -v out="$2" '
    function err(line, msg) { printf "ERROR\t%d\t%s\n", line, msg }
    {
      if (!infence && match($0, /^[ \t]*```/)) {
        indent = RSTART + RLENGTH - 4
        lang = substr($0, RSTART + RLENGTH); sub(/[ \t]+$/, "", lang)
        n++; infence = 1; start = NR; body = out "/" n ".body"; printf "" > body
        if (lang == "") err(NR, "a fence without a language: ```sh for commands, ```text for output and everything else")
        else if (lang !~ /^(sh|text|json|csv|c)$/) err(NR, "a fence in ```" lang ": ```sh for commands, else ```text, ```json, ```csv or ```c")
        d = (prev_directive_line == NR - 1) ? prev_directive : ""; pending = 0
        printf "%d\t%d\t%s\t%s\n", n, NR, lang, d
        next
      }
      if (infence && $0 ~ /^[ \t]*```[ \t]*$/) { infence = 0; close(body); next }
      if (infence) {
        line = $0
        if (indent > 0 && substr(line, 1, indent) ~ /^[ \t]*$/) line = substr(line, indent + 1)
        print line >> body
        next
      }
      if ($0 ~ /^[ \t]*<!-- *doc-test:/) {
        if ($0 !~ /^[ \t]*<!-- *doc-test:[^>]*-->[ \t]*$/) { err(NR, "a doc-test directive must be a line of its own: <!-- doc-test: ... -->"); next }
        d = $0; sub(/^[ \t]*<!-- *doc-test: */, "", d); sub(/ *-->[ \t]*$/, "", d)
        if (pending) err(pending, "a doc-test directive not followed by a fence on the next line")
        prev_directive = d; prev_directive_line = NR; pending = NR
        next
      }
      if (pending && NR == pending + 1) err(pending, "a doc-test directive not followed by a fence on the next line")
      pending = 0
    }
    END {
      if (infence) err(start, "a fence that is never closed")
      if (pending) err(pending, "a doc-test directive at the end of the file")
    }' "$1"
}

# The placeholders a command block may not hold, outside comments.
placeholders() {
  # shellcheck disable=SC2016  # a literal $ in the pattern: $NAME is a variable, not a placeholder
  sed -E 's/(^|[[:space:]])#.*$//' "$1" |
    grep -nE '(^|[^$A-Za-z0-9_{])(FILE|DIR|DIR_A|DIR_B|DIRS?|COMMAND|CMD|ARGS|SPACE|NAME|KERNEL|FORMAT|LEVEL|IFACE|HOST|PORT|ADDR|BUNDLE|LIST|PATH_TO)([^A-Za-z0-9_=]|$)|\[--|\.\.\.' || true
}

# Checks a block's directives; prints the error, if any.
check_directives() {  # lang directives
  local lang=$1 d item
  IFS=',' read -r -a items <<<"$2"
  for item in "${items[@]}"; do
    d=$(echo "$item" | sed -E 's/^ +| +$//g')
    case $d in
      '') ;;
      'netns A'|'netns B background'|'ci'|'repo root')
        [ "$lang" = sh ] || echo "'$d' is for a \`\`\`sh block" ;;
      'timeout '*|'exit '*)
        [ "$lang" = sh ] || echo "'$d' is for a \`\`\`sh block"
        [[ $d =~ ^timeout\ [0-9]+$|^exit(\ [0-9]+)+$|^exit\ [0-9]+\ without\ a\ GPU$ ]] ||
          echo "'$d': timeout SECONDS, exit CODE..., or exit CODE without a GPU" ;;
      'file '*)
        case $lang in json|csv) ;; *) echo "'$d' is for a \`\`\`json or \`\`\`csv block" ;; esac
        case ${d#file } in */*|''|.*) echo "'$d': a plain file name" ;; esac ;;
      *) echo "unknown directive '$d' (tests/docs/run_blocks.sh lists them)" ;;
    esac
  done
}
has() { [[ ",$1," == *", $2,"* || ",$1," == *",$2,"* ]]; }
directive_value() {  # directives key: the word after "key "
  local item
  IFS=',' read -r -a items <<<"$1"
  for item in "${items[@]}"; do
    item=$(echo "$item" | sed -E 's/^ +| +$//g')
    [[ $item == "$2 "* ]] && { echo "${item#"$2" }"; return; }
  done
}

# ---- the two hosts ---------------------------------------------------------------------------
ns_a="" ns_b="" bg_pid="" bg_where="" bg_log=""
netns_up() {
  [ -n "$ns_a" ] && return 0
  ns_a=doc-a-$$ ns_b=doc-b-$$
  local va=dta$$ vb=dtb$$
  ip netns add "$ns_a" && ip netns add "$ns_b" &&
    ip link add "$va" type veth peer name "$vb" &&
    ip link set "$va" netns "$ns_a" && ip link set "$vb" netns "$ns_b" &&
    ip -n "$ns_a" link set "$va" name eth1 && ip -n "$ns_b" link set "$vb" name eth1 &&
    ip -n "$ns_a" addr add 10.0.0.1/24 dev eth1 && ip -n "$ns_b" addr add 10.0.0.2/24 dev eth1 &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
    ip -n "$ns_a" link set eth1 up && ip -n "$ns_b" link set eth1 up
}
stop_background() {
  [ -n "$bg_pid" ] || return 0
  kill -TERM "$bg_pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$bg_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$bg_pid" 2>/dev/null
  wait "$bg_pid" 2>/dev/null
  bg_pid=""
}
netns_down() {
  stop_background
  local ns pid
  for ns in $ns_a $ns_b; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  ns_a="" ns_b=""
}

# ---- the source tree for `repo root` blocks --------------------------------------------------
# The git-ignored entries at the top and the entries of acceltune-results/: what a block may add.
tree_entries() {
  (cd "$root" && for e in * .[!.]*; do
    [ -e "$e" ] || continue
    git check-ignore -q "$e" 2>/dev/null && echo "$e"
  done
  [ -d acceltune-results ] && find acceltune-results -mindepth 1 -maxdepth 1) | sort
}
tree_cleanup() {  # the entries before
  local e
  while IFS= read -r e; do
    if [ -z "$e" ] || [ ! -e "$root/$e" ]; then continue; fi
    # never a build folder (this run's, or one being made beside it)
    case $e in build|build-*) continue ;; esac
    [ ! -e "$root/$e/CMakeCache.txt" ] || continue
    echo "       removed ./$e (the block wrote it)"
    rm -rf "${root:?}/$e"
  done < <(comm -13 "$1" <(tree_entries))
}


# ---- one block -------------------------------------------------------------------------------
failures=0 not_run=0 passed=0
report_failure() {  # where body log rc why
  failures=$((failures + 1))
  echo "FAILED $1 ($5)"
  echo "  -- the block:"; sed 's/^/  | /' "$2"
  echo "  -- the last $tail_lines lines of its output:"; tail -n "$tail_lines" "$3" | sed 's/^/  > /'
  echo "  -- exit code $4"
}

# Starts `bash -e BODY` in DIR under the block's timeout (in a namespace when NS is set), in the
# background; its pid in $started. timeout(1) leads a process group of its own and passes a
# signal on to all of it.
started=""
start_body() {  # ns dir body log timeout home
  local pre=()
  [ -n "$1" ] && pre=(ip netns exec "$1")
  (cd "$2" && HOME=$6 exec "${pre[@]}" timeout -k 10 "$5" bash -e "$3") </dev/null >"$4" 2>&1 &
  started=$!
}
current=""  # the foreground block, for the trap

# The test-suite command: .ci/run must run each of its commands (with those arguments), in order.
check_ci() {  # where body
  local cmd first last=0 n missing="" log=$scratch/.ci.log
  while IFS= read -r cmd; do
    cmd=$(echo "$cmd" | sed -E 's/^ +| +$//g')
    [ -n "$cmd" ] || continue
    first=${cmd%% *}
    n=$(grep -nE "^[[:space:]]*${first//./[.]}( |$)" "$root/.ci/run" | while IFS=: read -r ln text; do
      ok=1
      for w in $cmd; do [[ " $text " == *" $w "* ]] || ok=0; done
      [ $ok -eq 1 ] && echo "$ln"
    done | head -1)
    if [ -z "$n" ] || [ "$n" -le "$last" ]; then missing="$missing '$cmd'"; else last=$n; fi
  done < <(sed -E 's/(^|[[:space:]])#.*$//' "$2" | tr '\n' ' ' | sed 's/&&/\n/g')
  if [ -n "$missing" ]; then
    grep -v '^[[:space:]]*#' "$root/.ci/run" >"$log"
    report_failure "$1" "$2" "$log" - ".ci/run does not run, in this order:$missing"
  else
    passed=$((passed + 1))
    echo "ok     $1  not run (it runs this test): .ci/run runs the same commands, in order"
  fi
}

run_block() {  # where lang directives body scratch
  local where=$1 lang=$2 dirs=$3 body=$4 scratch=$5
  local t0=$SECONDS rc=0 dir=$scratch ns="" tmo log before="" bad name
  log=$(mktemp "$scratch/.log.XXXXXX")

  if [ "$lang" != sh ]; then
    name=$(directive_value "$dirs" file)
    cp "$body" "$scratch/$name"
    echo "ok     $where  \`\`\`$lang written to $name"
    return
  fi
  bad=$(placeholders "$body")
  if [ -n "$bad" ]; then
    echo "$bad" >"$log"
    report_failure "$where" "$body" "$log" - "a placeholder or a synopsis where a runnable command belongs"
    return
  fi
  if has "$dirs" ci; then check_ci "$where" "$body"; return; fi
  tmo=$(directive_value "$dirs" timeout)
  tmo=${tmo:-$block_timeout}
  if has "$dirs" "repo root"; then
    if [ "$(cd "$build" && pwd -P)" != "$(cd "$root" && pwd -P)/build" ]; then
      not_run=$((not_run + 1))
      echo "NOTRUN $where  it builds and runs the source tree's build/; this run was given $build"
      return
    fi
    dir=$root
    before=$(mktemp "$scratch/.tree.XXXXXX")
    tree_entries >"$before"
  fi
  if has "$dirs" "netns A" || has "$dirs" "netns B background"; then
    if [ "$(id -u)" -ne 0 ]; then
      not_run=$((not_run + 1))
      echo "NOTRUN $where  two network namespaces need root"
      return
    fi
    if ! netns_up >"$log" 2>&1; then
      report_failure "$where" "$body" "$log" - "could not make the two network namespaces"
      return
    fi
    if has "$dirs" "netns A"; then ns=$ns_a; else ns=$ns_b; fi
  fi

  if has "$dirs" "netns B background"; then
    start_body "$ns" "$dir" "$body" "$log" "$tmo" "$scratch"
    bg_pid=$started bg_log=$log bg_where=$where bg_body=$body
    for _ in $(seq 200); do
      [ -n "$(ip netns exec "$ns" ss -Htln 2>/dev/null)" ] && break
      kill -0 "$bg_pid" 2>/dev/null || break
      sleep 0.1
    done
    if [ -z "$(ip netns exec "$ns" ss -Htln 2>/dev/null)" ]; then
      stop_background
      report_failure "$where" "$body" "$log" - "a background block that never listened on a TCP port"
    else
      echo "ok     $where  listening in host B after $((SECONDS - t0)) s; runs until the next block ends"
    fi
    return
  fi

  start_body "$ns" "$dir" "$body" "$log" "$tmo" "$scratch"
  current=$started
  wait "$current"
  rc=$?
  current=""
  local took=$((SECONDS - t0)) want="0" note="" exits gpu_code
  exits=$(directive_value "$dirs" exit)
  if [[ $exits == *" without a GPU" ]]; then
    gpu_code=${exits%% *}
    if [ ! -e /proc/driver/nvidia ]; then
      want=$gpu_code note=" (expected without a GPU: /proc/driver/nvidia is absent)"
      if [ "$rc" -eq "$gpu_code" ] && ! grep -q 'GPU' "$log"; then
        report_failure "$where" "$body" "$log" "$rc" "exit $rc, but its output does not name the missing GPU"
        [ -z "$before" ] || tree_cleanup "$before"
        return
      fi
    fi
  elif [ -n "$exits" ]; then
    want=$exits note=" (one of the codes its directive allows)"
  fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    report_failure "$where" "$body" "$log" "$rc" "timed out after $tmo s"
  elif [[ " $want " != *" $rc "* ]]; then
    report_failure "$where" "$body" "$log" "$rc" "exit $rc after $took s, expected ${want// / or }$note"
  else
    passed=$((passed + 1))
    echo "ok     $where  ${took} s, exit $rc$note"
  fi
  [ -z "$before" ] || tree_cleanup "$before"
  finish_background "$where"
}

# A background block's outcome, once the block after it ended.
finish_background() {  # where
  [ -n "$bg_pid" ] || return 0
  if kill -0 "$bg_pid" 2>/dev/null; then
    stop_background
    passed=$((passed + 1))
    echo "ok     $bg_where  ran until $1 ended, then stopped"
  else
    local rc=0
    wait "$bg_pid" || rc=$?
    bg_pid=""
    if [ "$rc" -eq 0 ]; then
      passed=$((passed + 1))
      echo "ok     $bg_where  ended by itself, exit 0"
    else
      report_failure "$bg_where" "$bg_body" "$bg_log" "$rc" "the background block ended with an error"
    fi
  fi
}

run_file() {  # file
  local file=$1 rel index n line lang dirs err
  rel=${file#"$root"/}
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/doc-blocks.XXXXXX")
  cleanup_dirs+=("$scratch")
  mkdir "$scratch/.blocks"
  [ "$list_only" -eq 1 ] || echo "== $rel (scratch folder $scratch)"
  index=$(extract "$file" "$scratch/.blocks")
  while IFS=$'\t' read -r n line lang dirs; do
    [ -n "$n" ] || continue
    if [ "$n" = ERROR ]; then
      failures=$((failures + 1))
      echo "FAILED $rel:$line ($lang)"
      continue
    fi
    err=$(check_directives "$lang" "$dirs")
    if [ -n "$err" ]; then
      failures=$((failures + 1))
      echo "FAILED $rel:$line ($err)"
      continue
    fi
    [ "$lang" = sh ] || [ -n "$dirs" ] || continue
    if [ "$list_only" -eq 1 ]; then
      echo "$rel:$line  \`\`\`$lang${dirs:+  <!-- doc-test: $dirs -->}"
      continue
    fi
    run_block "$rel:$line" "$lang" "$dirs" "$scratch/.blocks/$n.body" "$scratch"
  done <<<"$index"
  if [ "$list_only" -eq 0 ] && ! grep -qP '^\d+\t\d+\t(sh\t|\w+\tfile )' <<<"$index"; then
    echo "       no command block"
  fi
  finish_background "the end of $rel"
  netns_down
}

cleanup_dirs=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [ -z "$current" ] || { kill -TERM "$current" 2>/dev/null; wait "$current" 2>/dev/null; }
  netns_down
  local d
  for d in "${cleanup_dirs[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
trap 'echo "run_blocks: interrupted" >&2; exit 130' INT TERM HUP

# ---- the self-test ---------------------------------------------------------------------------
self_test() {
  local t out rc fence='```'
  t=$(mktemp -d)
  cleanup_dirs+=("$t")
  mkdir -p "$t/tools"
  printf '#!/bin/sh\necho "fake acceltune $*" >>acceltune-ran\n' >"$t/tools/acceltune"
  chmod +x "$t/tools/acceltune"
  {
    echo "# passes"; echo
    echo "<!-- doc-test: file seen.json -->"; echo "${fence}json"; echo '{"a": 1}'; echo "$fence"
    echo "${fence}sh"; echo "acceltune search --out study1"; echo "test -f seen.json"; echo "mkdir made"; echo "$fence"
    echo "${fence}text"; echo "exit 1"; echo "$fence"
    echo "${fence}sh"; echo "test -d made   # the folder the block before made"
    echo "grep -q 'search --out study1' acceltune-ran && test \"\$HOME\" = \"\$PWD\""; echo "$fence"
    echo "<!-- doc-test: exit 0 3 -->"; echo "${fence}sh"; echo "exit 3"; echo "$fence"
  } >"$t/pass.md"
  { echo "${fence}sh"; echo "false"; echo "echo never"; echo "$fence"; } >"$t/fail.md"
  { echo "${fence}sh"; echo "acceltune best DIR"; echo "$fence"; } >"$t/placeholder.md"
  { echo "$fence"; echo "acceltune spaces"; echo "$fence"; } >"$t/bare.md"
  { echo "<!-- doc-test: skip -->"; echo "${fence}sh"; echo "true"; echo "$fence"; } >"$t/unknown.md"
  { echo "<!-- doc-test: exit 4 without a GPU -->"; echo "${fence}sh"; echo "exit 3"; echo "$fence"; } >"$t/exit.md"
  { echo "<!-- doc-test: exit 4 without a GPU -->"; echo "${fence}sh"; echo "exit 4"; echo "$fence"; } >"$t/nogpu.md"

  out=$("$0" "$t" "$t/pass.md" 2>&1); rc=$?
  if [ $rc -ne 0 ] || [ "$(grep -c '^ok ' <<<"$out")" -ne 4 ]; then
    echo "run_blocks: self-test: passing blocks did not pass (exit $rc):"; echo "$out"; return 1
  fi
  for f in fail placeholder bare unknown exit nogpu; do
    out=$("$0" "$t" "$t/$f.md" 2>&1); rc=$?
    if [ $rc -ne 1 ] || ! grep -q '^FAILED ' <<<"$out"; then
      echo "run_blocks: self-test: $f.md did not fail (exit $rc):"; echo "$out"; return 1
    fi
  done
  out=$("$0" "$t" "$t/fail.md" 2>&1)
  if ! grep -q '^  | false' <<<"$out" || ! grep -q 'exit code 1' <<<"$out" || grep -q '^  > never' <<<"$out"; then
    echo "run_blocks: self-test: a failure does not show its block and exit code, or set -e did not stop it:"
    echo "$out"; return 1
  fi
  echo "run_blocks: self-test: a failing block, a placeholder, a bare fence, an unknown directive, a wrong exit"
  echo "  and an exit 4 that names no GPU fail; passing blocks pass, in one folder that is also HOME, with the"
  echo "  build's tools first on PATH and a file a json block wrote; a \`\`\`text block is not run"
}

# ---- main ------------------------------------------------------------------------------------
list_only=0
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  --self-test) self_test; exit ;;
  --list) list_only=1; shift; build=. ;;
  '') usage >&2; exit 2 ;;
  -*) die "unknown option '$1' (--help)" ;;
  *) build=$1; shift
     [ -x "$build/tools/acceltune" ] || die "no $build/tools/acceltune: give the build folder"
     build=$(cd "$build" && pwd) ;;
esac
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=("$root/README.md")
  for f in "$root"/docs/*.md; do files+=("$f"); done
fi
export PATH="$build/tools:$PATH"
if [ "$(id -u)" -eq 0 ]; then
  # Open MPI's mpirun refuses root without these; a user runs the blocks as themselves.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
start=$SECONDS
for f in "${files[@]}"; do
  [ -f "$f" ] || die "no file $f"
  run_file "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
done
[ "$list_only" -eq 1 ] && exit $((failures > 0))
echo "== $passed passed, $failures failed, $not_run not run here, in $((SECONDS - start)) s"
if [ "$failures" -gt 0 ]; then exit 1; fi
if [ "$not_run" -gt 0 ]; then exit 77; fi
exit 0
