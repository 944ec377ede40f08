// Package examples holds runnable examples of gavel's three uses: inside an
// admission webhook (webhook), in a gitops pipeline (gitops), from policy
// unit tests (unittest), and as a namespace provisioner built on generate
// rules (generate). The policies and resources folders are the bundled
// sample set the README's first command runs on.
package examples
