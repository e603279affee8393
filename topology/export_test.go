package topology

// SearchDiameter exposes the breadth-first search Diameter falls back to, so
// that tests can check each graph's own Diameter method against it.
var SearchDiameter = searchDiameter
