// Minimal types for the parts of autocannon the bench harness uses (the package ships none).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
      path?: string;
      body?: string;
      headers?: Record<string, string>;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      headers?: Record<string, string>;
      requests?: Request[];
    }
    interface Result {
      requests: { average: number; total: number };
      latency: { p50: number; p99: number };
      non2xx: number;
      errors: number;
      timeouts: number;
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
