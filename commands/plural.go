package commands

import "fmt"

// plural is "1 message", "2 messages", "0 messages".
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
