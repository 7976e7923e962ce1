// Package sdktest drives the official vendor SDKs (openai-go and others)
// through throttle's Transport against the vendor-shaped fake of package
// throttletest, as a user's program would. It is a module of its own so
// that the SDKs never enter the root module's requirements; it has tests
// only.
package sdktest
