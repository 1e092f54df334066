#!/usr/bin/env bash
# The shape of the code, checked on the sources (.cpp .hpp .h .c .cu) outside tests/ and
# tools/bench/: no file over 600 lines, no function over 100. pmccabe measures the functions (its
# fifth column: the lines from a function's first to its closing brace); a file it cannot parse is
# a finding too, for its functions would go unmeasured.
# Usage: check_sizes.sh [ROOT]   (default: the source tree). Prints each file and function over its
# limit with its line and length, and exits 1 when there is any; 2 without pmccabe.
#        check_sizes.sh --self-test   shows the check fails: a tree with one file, three functions
#        (one in a nested namespace) and one unparseable file against the rules must give exactly
#        those, a tree that keeps them (each at its limit) none, and a pmccabe that measures nothing
#        a finding.
# PMCCABE names the program to run (default: pmccabe).
set -uo pipefail
max_file_lines=600
max_function_lines=100

if [ "${1:-}" = --self-test ]; then
  t=$(mktemp -d) && trap 'rm -rf "$t"' EXIT
  mkdir -p "$t"/{tuner,kernels/tcp,search,results,tests,tools/bench}
  lines() { for ((i = 0; i < $1; i++)); do echo "$2"; done; }
  function_of() {  # name, lines in all (the signature and the closing brace included)
    echo "int $1() {"; lines $(($2 - 3)) "  work();"; echo "  return 0;"; echo "}"
  }
  { function_of at_limit "$max_function_lines"
    printf 'struct S : B {\n  void f() override { work(); }\n  void g() noexcept { work(); }\n};\n'
    printf 'ACCELTUNE_REGISTER(Info, "x",\n                   (Info{"a (string", f}))\n'
  } >"$t/tuner/ok.cpp"
  lines $((max_file_lines - $(wc -l <"$t/tuner/ok.cpp"))) "// filler" >>"$t/tuner/ok.cpp"
  { function_of long "$((max_function_lines + 50))"; lines "$max_file_lines" "//"; } >"$t/tests/big.cpp"
  cp "$t/tests/big.cpp" "$t/tools/bench/big.cpp"
  if ! "$0" "$t" >/dev/null; then echo "check_sizes: refused a tree that keeps the sizes"; exit 1; fi
  if PMCCABE="$t/absent" "$0" "$t" >/dev/null; then
    echo "check_sizes: passed without pmccabe"; exit 1
  fi
  if PMCCABE=true "$0" "$t" >/dev/null; then
    echo "check_sizes: passed a tree of which pmccabe measured nothing"; exit 1
  fi
  lines $((max_file_lines + 1)) "// filler" >"$t/tuner/long.hpp"                  # a long file
  function_of too_long "$((max_function_lines + 1))" >"$t/kernels/tcp/a.cpp"        # a long function
  { echo "class C {"; echo " public:"; function_of member "$((max_function_lines + 20))"; echo "};"; } >"$t/results/b.hpp"
  printf 'int f() {\n  return 0;\n}\n}\n' >"$t/search/c.cpp"                       # one brace too many
  { echo "namespace a::b {"; function_of nested "$((max_function_lines + 1))"; echo "}"; } >"$t/search/d.cpp"
  out=$("$0" "$t")
  got=$(grep -c '^tuner/long.hpp: \|^kernels/tcp/a.cpp:1: \|^results/b.hpp:3: \|^search/c.cpp:4: \|^search/d.cpp:2: function a::b::nested ' <<<"$out")
  if [ "$got" != 5 ] || [ "$(grep -vc '^check_sizes: ' <<<"$out")" != 5 ]; then
    echo "check_sizes: found $got of the 5 findings:"; echo "$out"; exit 1
  fi
  echo "check_sizes: self-test found all 5 findings against the sizes"
  exit 0
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "check_sizes: no folder $root" >&2; exit 2; }
pmccabe=${PMCCABE:-pmccabe}
if ! command -v "$pmccabe" >/dev/null; then
  echo "check_sizes: $pmccabe is not installed, so no function can be measured; install it" \
    "(apt-get install pmccabe, or tools/setup.sh --tests)"
  exit 2
fi

# What pmccabe, a C parser that knows some C++, misreads, rewritten without moving a line:
# override, final and noexcept before a body; a trailing return type; a macro call at the top
# level without a semicolon (the registrations at the end of a file); a nested namespace's name
# (`namespace a::b {`, after which pmccabe silently measures nothing).
pmccabe_input() {
  sed -E -e '/^namespace [A-Za-z_0-9:]+ [{]/ s/::/__/g' \
    -e 's/\<(override|final|noexcept)\>//g' \
    -e 's/\)([[:space:]]*const)?[[:space:]]+->[[:space:]][^;{}]*\{[[:space:]]*$/)\1 {/' "$1" |
    awk '
      function bare(s) {  # the code of a line: no escapes, strings, characters or comment
        gsub(/\\./, "", s); gsub(/"[^"]*"/, "", s); gsub(/'"'"'[^'"'"']*'"'"'/, "", s); sub(/\/\/.*/, "", s)
        return s
      }
      depth == 0 && /^[[:space:]]*[A-Z][A-Z0-9_]*\(/ { macro = 1 }
      macro {
        s = bare($0); depth += gsub(/\(/, "(", s) - gsub(/\)/, ")", s)
        if (depth <= 0) { macro = 0; depth = 0; if (s ~ /\)[[:space:]]*$/) $0 = $0 ";" }
      }
      { print }'
}

work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
files=()
while IFS= read -r -d '' f; do files+=("${f#./}"); done < <(
  find . \( -name '.*' ! -name . -o -path ./tests -o -path ./tools/bench -o -exec test -e '{}/CMakeCache.txt' \; \) -prune \
    -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' \) -print0 | sort -z)

findings=0
for f in "${files[@]}"; do
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_file_lines" ]; then
    echo "$f: $n lines, over the $max_file_lines a file may have"
    findings=$((findings + 1))
  fi
  mkdir -p "$work/${f%/*}" && pmccabe_input "$f" >"$work/$f"
done
if [ ${#files[@]} -gt 0 ]; then
  (cd "$work" && "$pmccabe" "${files[@]}" >"$work/.functions" 2>"$work/.errors")
  # file(line): name, with its first line (column 4) and its length (column 5)
  declare -A measured=()
  while IFS=$'\t' read -r _ _ _ first length where; do
    measured[${where%%(*}]=1
    if [ "$length" -gt "$max_function_lines" ]; then
      name=${where#*: }
      echo "${where%%(*}:$first: function ${name//__/::} is $length lines, over the $max_function_lines a function may have"
      findings=$((findings + 1))
    fi
  done <"$work/.functions"
  # A file with a function body (a line that ends in ") {" or ") const {") of which pmccabe measured
  # nothing, and said nothing, is one it silently misread: a finding too.
  for f in "${files[@]}"; do
    [ -z "${measured[$f]:-}" ] || continue
    body=$(grep -nE '\)[[:space:]]*(const[[:space:]]*)?[{][[:space:]]*$' "$f" | head -1)
    [ -n "$body" ] || continue
    echo "$f:${body%%:*}: pmccabe measured no function in this file though it has a body here, so its functions go unmeasured"
    findings=$((findings + 1))
  done
  # "file", line N: what confused it
  while IFS= read -r e; do
    [ -n "$e" ] || continue
    sed -E 's/^"([^"]*)", line ([0-9]+): (.*)$/\1:\2: pmccabe cannot parse this file (\3), so its functions go unmeasured/' <<<"$e"
    findings=$((findings + 1))
  done <"$work/.errors"
fi
if [ "$findings" -gt 0 ]; then
  echo "check_sizes: $findings finding(s) in ${#files[@]} files"
  exit 1
fi
echo "check_sizes: ${#files[@]} files within $max_file_lines lines, their functions within $max_function_lines"
