#!/usr/bin/env bash
# The project's test command (README): formatting, vet, the whole suite,
# and the race detector on the packages that run goroutines.
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -count=1 ./...

# The race detector on every package that starts goroutines: the runtime,
# the transport and the parallel simulators. Selected from the real package
# list, so a package that does not exist yet cannot make this step vanish.
race_pkgs=$(go list ./... | grep -E '/(sim|transport|aggregate|broadcast|cmd/gossipreduce)$')
echo "race detector on:" $race_pkgs
go test -count=1 -race $race_pkgs
echo "all tests passed"
