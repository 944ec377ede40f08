// Package cellib holds Kyverno's CEL libraries, one package per library
// (http, resource, image, imagedata, globalcontext, user, json, yaml,
// x509, hash, math, time, random, gzip, transform, generator), with
// upstream's names, overloads, types and results. Each package's Lib
// returns a cel-go EnvOption that declares the library's functions and
// variables; the host-backed libraries (resource, http, imagedata,
// globalcontext, generator) read their host, the evaluation's context and
// the policy's namespace from the value of their variable, which package
// cel binds per evaluation, so that compiled programs stay immutable and
// shareable. Package cel (WithLibraries, Libraries) is the integration
// point; nothing here is public API.
package cellib
