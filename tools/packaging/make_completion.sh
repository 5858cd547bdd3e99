#!/usr/bin/env bash
# tools/packaging/make_completion.sh MDNL — writes bash completion for mdnl on
# stdout from the program's own help: the commands of `mdnl --help` and the
# options each `mdnl COMMAND --help` lists. The build runs it
# (CMakeLists.txt: mdnl.bash-completion).
set -euo pipefail
mdnl=$1
commands=$("$mdnl" --help | sed -n '/^commands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
echo "# bash completion for mdnl (generated from mdnl --help by tools/packaging/make_completion.sh)"
echo "_mdnl() {"
echo '    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} opts'
echo '    if [ "$COMP_CWORD" -eq 1 ]; then'
echo "        COMPREPLY=(\$(compgen -W \"$(echo $commands) --version --help\" -- \"\$cur\"))"
echo '        return'
echo '    fi'
echo '    case $cmd in'
for c in $commands; do
  opts=$("$mdnl" "$c" --help 2>&1 | grep -oE '(^|[ ,|])--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ ,|]//' | sort -u | tr '\n' ' ')
  echo "    $c) opts=\"$opts\" ;;"
done
echo '    *) opts="" ;;'
echo '    esac'
echo '    if [[ $cur == -* ]]; then'
echo '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))'
echo '    else'
echo '        COMPREPLY=($(compgen -f -- "$cur"))'
echo '    fi'
echo '}'
echo 'complete -o filenames -F _mdnl mdnl'
