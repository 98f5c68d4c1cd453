package mql

// JoinAfterForTest makes a find join a condition after n lookups, and returns what restores
// the default.
func JoinAfterForTest(n int) func() {
	old := joinAfter
	joinAfter = n
	return func() { joinAfter = old }
}
