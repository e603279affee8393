package broadcast

import "github.com/gossipreduce/gossipreduce/gossip"

// failProof is the state of fail-proof correction (corrected gossip III.D,
// Algorithm 3). A g-node sends left and right alternately like checked
// correction, each message carrying the sender and the g-nodes it knows on
// the side the message comes from, so the receiver learns of g-nodes on
// that side. Once a g-node knows F other g-nodes on one side, its messages
// towards the other side carry F+1 g-nodes: it starts a final round
// towards that other side, again from distance 1, and ends it after
// sending to the (F+1)-th g-node it knows there (Lemmas 2 and 4 of the
// paper). A c-node delivers once it has learned of F+1 g-nodes; if it has
// not after SOSTimeout, or a g-node would pass the whole ring in one
// direction, it floods an SOS to every process, and so does every process
// that receives an SOS.
type failProof struct {
	f     int
	gnode bool
	// known[0] lists the nearest g-nodes to the left, known[1] to the
	// right, nearest first, at most f+1.
	known [2][]int32
	dist  [2][]int32
	off   [2]int32
	final [2]bool
	fin   [2]bool
	turn  int
	// a c-node's distinct g-nodes learned so far (at most f+1)
	seen      []int32
	delivered bool
}

func newFailProof(f int) *failProof {
	fp := &failProof{f: f}
	for s := range fp.known {
		fp.known[s] = make([]int32, 0, f+1)
		fp.dist[s] = make([]int32, 0, f+1)
	}
	return fp
}

func (fp *failProof) done() bool {
	if fp.gnode {
		return fp.fin[0] && fp.fin[1]
	}
	return fp.delivered
}

// settle starts the final round towards side s once f g-nodes are known
// on the other side, and ends it once it has reached the (f+1)-th g-node
// known on side s.
func (fp *failProof) settle(s int) {
	if !fp.final[s] && len(fp.known[1-s]) >= fp.f {
		fp.final[s] = true
		fp.off[s] = 0
	}
	if fp.final[s] && len(fp.dist[s]) > fp.f && fp.off[s] >= fp.dist[s][fp.f] {
		fp.fin[s] = true
	}
}

// pollFailProof sends the next fail-proof message of a g-node.
func (m *Machine) pollFailProof(t int64, out []gossip.Message) []gossip.Message {
	fp := m.fp
	fp.settle(0)
	fp.settle(1)
	if fp.fin[0] && fp.fin[1] {
		return out
	}
	s := fp.turn
	if fp.fin[s] {
		s = 1 - s
	}
	fp.turn = 1 - s
	if int64(fp.off[s])+1 >= int64(m.plan.n) {
		// A whole round without the g-nodes needed to finish this side.
		m.sos = 1
		return m.Poll(t-m.off, out)
	}
	fp.off[s]++
	off := int64(fp.off[s])
	typ := MsgFailRight
	if s == 0 {
		off, typ = -off, MsgFailLeft
	}
	msg := m.message(m.target(off), typ, 0)
	// The receiver lies on side s; it learns of us and of what we know on
	// the other side.
	other := fp.known[1-s]
	payload := make([]float64, 0, len(m.value)+1+len(other))
	payload = append(payload, m.value...)
	payload = append(payload, float64(m.id))
	for _, id := range other {
		payload = append(payload, float64(id))
	}
	msg.Payload = payload
	msg.Tag = EncodeTag(typ, 1+len(other), gossip.NodeID(m.root), t)
	fp.settle(s)
	return append(out, msg)
}

// onFailProof handles a fail-proof message: a leftward message comes from
// a g-node on the right and tells about g-nodes on the right.
func (m *Machine) onFailProof(typ MsgType, ids []float64, fresh bool) {
	if fresh {
		m.fp = newFailProof(m.plan.f) // a c-node
	}
	fp := m.fp
	if fp == nil {
		return
	}
	side := 0
	if typ == MsgFailLeft {
		side = 1
	}
	for _, x := range ids {
		id := int32(x)
		if id == m.id {
			continue
		}
		if !fp.gnode {
			if !fp.delivered && !containsInt32(fp.seen, id) {
				fp.seen = append(fp.seen, id)
				if len(fp.seen) > fp.f {
					fp.delivered = true
				}
			}
			continue
		}
		fp.learn(side, id, m.ringDist(id, side == 0))
	}
}

// learn inserts g-node id at distance d on side s, keeping the f+1 nearest.
func (fp *failProof) learn(s int, id, d int32) {
	ks, ds := fp.known[s], fp.dist[s]
	for _, k := range ks {
		if k == id {
			return
		}
	}
	i := len(ds)
	for i > 0 && ds[i-1] > d {
		i--
	}
	if i > fp.f {
		return
	}
	if len(ks) <= fp.f {
		ks = append(ks, 0)
		ds = append(ds, 0)
	}
	copy(ks[i+1:], ks[i:len(ks)-1])
	copy(ds[i+1:], ds[i:len(ds)-1])
	ks[i], ds[i] = id, d
	fp.known[s], fp.dist[s] = ks, ds
}

func containsInt32(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
