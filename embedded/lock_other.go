//go:build !unix

package embedded

import (
	"fmt"
	"os"
)

// lockStore creates the store directory; other systems than Unix have no
// lock on it.
func lockStore(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded: JetStream store: %w", err)
	}
	return nil, nil
}
