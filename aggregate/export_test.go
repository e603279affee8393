package aggregate

// SparseTicks makes every driver of this process tick its machine only
// when member.Machine.NextTick says a tick can act, as a member alone in
// its process does, until restore is called (see driver.pace).
func SparseTicks() (restore func()) {
	old := sparseTicks.Swap(true)
	return func() { sparseTicks.Store(old) }
}

// Ticks is how many times the node's machine was ticked.
func (n *Node) Ticks() int64 { return n.ticks.Load() }
