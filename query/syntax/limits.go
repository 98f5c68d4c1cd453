package syntax

// MaxStmtTokens is the most tokens one statement may hold. MaxStmtBytes alone lets a 1 MiB
// statement of one-byte tokens ("a,a,a,…") cost the parser some 600 MB; at 20,000 tokens a
// statement costs it at most a few MB, and real statements stay far below (a derivation from
// 1,000 inputs is about 4,000 tokens). A longer statement is a syntax error at its start.
const MaxStmtTokens = 20_000

// tooManyTokens is the message of that error.
const tooManyTokens = "statement has more than 20,000 tokens; split it"
