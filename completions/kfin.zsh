#compdef kfin

_kfin_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _KFIN_COMPLETE=complete_zsh kfin)
}

compdef _kfin_completion kfin
