package complete

// Bash is the bash script for both programs: it asks the program for the
// words (RequestFlag) and leaves the words after "--", the child's, to
// bash's default completion.
const Bash = `# bash completion for dual-proxy and claude-dual-proxy (dual-proxy completion bash)
_dual_proxy_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts w
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  for w in "${words[@]:1}"; do
    [[ "$w" == "--" ]] && return 1   # the child's arguments: default completion
  done
  local ask="$cur"
  [[ "$ask" == "--" ]] && ask="-"   # the word being completed; "-" asks for every flag
  opts=$("${words[@]}" "$ask" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _dual_proxy_complete dual-proxy claude-dual-proxy
`

// Zsh is the zsh script for both programs, as Bash, with file names
// after "--".
const Zsh = `#compdef dual-proxy claude-dual-proxy
# zsh completion for dual-proxy and claude-dual-proxy (dual-proxy completion zsh)
_dual_proxy_complete() {
  local -a opts
  local cur=${words[-1]}
  local w
  for w in "${(@)words[2,-2]}"; do
    # the child's arguments (an element test: ${${words[2,-2]}[(I)--]} was
    # a substring search whenever one word stood before the cursor)
    [[ "$w" == -- ]] && { _files; return }
  done
  local ask=$cur
  [[ "$ask" == "--" ]] && ask=-   # the word being completed; "-" asks for every flag
  opts=("${(@f)$(${words[@]:0:#words[@]-1} "$ask" --generate-bash-completion 2>/dev/null)}")
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _dual_proxy_complete dual-proxy claude-dual-proxy
`
