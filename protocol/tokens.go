package protocol

// maxTokens is memcached's MAX_TOKENS: a command line is split into at most
// maxTokens-1 tokens; the rest of a longer line is left for commands that
// take any number of keys (get).
const maxTokens = 24

// tokenize splits line at spaces as memcached's tokenize_command does,
// appending the tokens to toks[:0]. At most maxTokens-1 tokens are split
// off; rest is the unsplit remainder of a longer line (nil when the whole
// line was split). memcached's token count is len(tokens)+1. Cost: one pass
// over the line, no allocation when toks has room.
func tokenize(line []byte, toks [][]byte) (tokens [][]byte, rest []byte) {
	toks = toks[:0]
	s := 0
	for e := 0; e < len(line); e++ {
		if line[e] != ' ' {
			continue
		}
		if s != e {
			toks = append(toks, line[s:e])
			if len(toks) == maxTokens-1 {
				if e+1 < len(line) {
					return toks, line[e+1:]
				}
				return toks, nil
			}
		}
		s = e + 1
	}
	if s != len(line) {
		toks = append(toks, line[s:])
	}
	return toks, nil
}

// nextToken returns the first space-separated token of s and what follows
// it; tok is empty when s holds only spaces.
func nextToken(s []byte) (tok, after []byte) {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] != ' ' {
		j++
	}
	return s[i:j], s[j:]
}
