// k6's closed-loop measurement for the load-generator benchmark (tools/bench): VUS
// virtual users, each sending its next GET as soon as the previous one is answered, for
// DURATION, against TARGET.
// Bodies are discarded (k6's own advice for load tests); the other generators read the
// 100-byte body and drop it too.
import http from 'k6/http';

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'p(50)', 'p(99)', 'max'],
  scenarios: {
    closed: {
      executor: 'constant-vus',
      vus: parseInt(__ENV.VUS, 10),
      duration: __ENV.DURATION,
      gracefulStop: '0s',
    },
  },
};

export default function () {
  http.get(__ENV.TARGET);
}
