package gossipreduce_test

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSourcesAreGofmtClean fails for every Go file of the module that gofmt
// would change, so that the test command checks formatting too (CI once
// refused a submission for exactly that).
func TestSourcesAreGofmtClean(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Hidden directories and testdata hold no sources of ours.
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		formatted, err := format.Source(src)
		if !assert.NoError(t, err, "%s does not parse", path) {
			return nil
		}
		assert.True(t, bytes.Equal(src, formatted), "gofmt would change %s", path)
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, files, "no Go files found: the test runs from the module root")
}
