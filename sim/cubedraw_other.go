//go:build !amd64

package sim

// haveCubeAVX512 is false off amd64.
const haveCubeAVX512 = false

// cubeTargetsVector does nothing off amd64: cubeTargets draws every node in
// Go.
func cubeTargetsVector([]uint32, int, uint64, uint64) int { return 0 }

// haveGaussSeidelAsm is false off amd64.
const haveGaussSeidelAsm = false

// gaussSeidelFrom leaves every node to gaussSeidel off amd64.
func gaussSeidelFrom(_ []xwPair, _ []uint32, _ []xwPair, k int, _ runningMaxErr) int { return k }
