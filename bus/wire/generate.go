package wire

//go:generate go run ./internal/wiregen
