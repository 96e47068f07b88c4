import { useSearchParams } from 'react-router';

/** List filters kept in the URL (so a filtered view can be linked and reloaded): read one, set or clear one. */
export function useUrlFilters() {
  const [params, setParams] = useSearchParams();
  const get = (k: string) => params.get(k) ?? '';
  const set = (k: string, v: string) => {
    const next = new URLSearchParams(params);
    if (v) next.set(k, v);
    else next.delete(k);
    setParams(next, { replace: true });
  };
  return { get, set };
}
