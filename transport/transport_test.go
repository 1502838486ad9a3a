package transport
