package sdktest_test

// must returns v, or panics with err: for constructors whose error a test
// does not expect, which fail it loudly.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
