#!/usr/bin/env bash
# Runs the sample apps' own tests (JUnit; node --test; the proxies' need no database) against a real PostgreSQL, then
# starts both bulletin boards on freshly seeded databases and checks that they answer
# the same requests with the same bytes (apps/parity/compare.mjs). The PostgreSQL server
# is private, started here in a temporary state directory as an unprivileged user;
# it and the apps are stopped again, by PID, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
state=$(mktemp -d /tmp/cfbench-apps-pg.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	bin/cfbench-pg stop --state-dir "$state" >/dev/null || true
	rm -rf "$state"
}
trap cleanup EXIT
db() { bin/cfbench-pg start --state-dir "$state" --db "$1"; }
# Maven and the JVM it forks for the tests live seconds: the client compiler alone and
# the serial collector start them with less than half the CPU (23 -> 11 CPU-s for
# bulletin-java's tests, which runs beside the Go packages' tests).
quick_jvm="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
mvn_test() { MAVEN_OPTS="${MAVEN_OPTS:-} $quick_jvm" mvn -B -ntp "-DargLine=$quick_jvm" -f "$1" test; }
java_db=$(scripts/pg-local.sh start --state-dir "$state" --db bulletin_java_test)
node_db=$(db bulletin_node_test)

echo "test-apps: bulletin-java (mvn test)" >&2
DATABASE_URL=$java_db mvn_test apps/bulletin-java/pom.xml | grep -E "Tests run|FAIL|ERROR|BUILD"
echo "test-apps: bulletin-node (node --test)" >&2
(cd apps/bulletin-node && DATABASE_URL=$node_db npm test --silent)

echo "test-apps: proxy-java (mvn test)" >&2
mvn_test apps/proxy-java/pom.xml | grep -E "Tests run|FAIL|ERROR|BUILD"
echo "test-apps: proxy-node (node --test)" >&2
(cd apps/proxy-node && npm test --silent)

echo "test-apps: parity of the two apps' answers" >&2
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
java_port=$(free_port)
node_port=$(free_port)
PORT=$java_port DATABASE_URL=$(db parity_java) java -jar apps/bulletin-java/target/bulletin-java.jar >"$state/java.log" 2>&1 &
pids+=($!)
PORT=$node_port DATABASE_URL=$(db parity_node) node apps/bulletin-node/server.js >"$state/node.log" 2>&1 &
pids+=($!)
for port in "$java_port" "$node_port"; do
	for _ in $(seq 1 120); do
		node -e "fetch('http://127.0.0.1:$port/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" && break
		sleep 0.5
	done
done
if ! node apps/parity/compare.mjs "http://127.0.0.1:$java_port" "http://127.0.0.1:$node_port"; then
	echo "--- java log"; cat "$state/java.log"; echo "--- node log"; cat "$state/node.log"
	exit 1
fi
