complete --keep-order --exclusive --command agentcron --arguments "(COMPLETE=fish agentcron -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
