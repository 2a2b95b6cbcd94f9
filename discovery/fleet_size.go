package discovery

import (
	"unsafe"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// What decoded values take on a 64-bit heap, roughly (measured with Go
// 1.26): a string header, a slice's element that is an interface, and a
// map[string]any: empty, with up to 8 entries (one group of slots), and
// per entry past that (key and value headers, the tables' share).
const (
	sizeString   = 16
	sizeIface    = 16
	sizeSlice    = 24
	sizeMapEmpty = 48
	sizeMapSmall = 336
	sizeMapEntry = 64
)

// decodedSize estimates the bytes ann takes on the heap once decoded (as
// decodeAnnouncement leaves it): the structs, their strings and what the
// schemas and meta parts hold. A fleet counts this, not the bytes
// received, against maxInstanceBytes: an announcement of many small
// // tools takes about ten times more decoded than on the wire
// (TestFleetCountsDecodedSize keeps the estimate within a factor of two
// of what the heap shows).
func decodedSize(ann *wire.Announcement) int {
	n := int(unsafe.Sizeof(*ann)) + len(ann.Instance) + len(ann.Version) + len(ann.Queue) + len(ann.Incarnation)
	n += cap(ann.Groups) * int(unsafe.Sizeof(wire.AnnouncedGroup{}))
	for _, g := range ann.Groups {
		n += len(g.Name) + len(g.Description) + len(g.Instructions)
	}
	n += cap(ann.Tools) * int(unsafe.Sizeof(wire.AnnouncedTool{}))
	for i := range ann.Tools {
		t := &ann.Tools[i]
		n += len(t.Name) + len(t.Description) + len(t.Group) + len(t.Idempotency) + len(t.Kind) + valueSize(t.Parameters)
		n += cap(t.Order) * int(unsafe.Sizeof(toolkit.KeyOrder{}))
		for _, o := range t.Order {
			n += len(o.Path) + cap(o.Keys)*sizeString
			for _, k := range o.Keys {
				n += len(k)
			}
		}
		n += cap(t.ListedWith) * sizeString
		for _, g := range t.ListedWith {
			n += len(g)
		}
	}
	return n + valueSize(ann.Meta)
}

// valueSize estimates the bytes a JSON-shaped value (jsonShaped) takes
// on the heap, the interface holding it aside.
func valueSize(v any) int {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return 0
		}
		n := sizeMapEntry * len(v)
		switch {
		case len(v) == 0:
			n = sizeMapEmpty
		case len(v) <= 8:
			n = sizeMapSmall
		}
		for k, e := range v {
			n += len(k) + valueSize(e)
		}
		return n
	case []any:
		n := sizeSlice + sizeIface*cap(v)
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case string:
		return sizeString + len(v)
	case float64:
		return 8
	}
	return 0
}
