package ring

// Waiting returns the words of the early partials m keeps.
func Waiting(m *Machine) int {
	n := 0
	for _, p := range m.pending {
		n += len(p)
	}
	return n
}
