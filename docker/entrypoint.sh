#!/bin/sh
# docker/entrypoint.sh -- run mfud as PID 1's only child-free process: exec,
# so SIGTERM from `docker stop` reaches the daemon, which then stops
# accepting, persists unfinished jobs and closes the database cleanly.
# In a container the daemon must listen on all interfaces (MFUD_BIND is set
# to 0.0.0.0 by the image); publish the port only where it should be reached
# and consider MFUD_AUTH_TOKEN for POST routes.
set -e
exec /usr/local/bin/mfud "$@"
