import { PageHeader } from '../../ui/primitives';

export default function ComingSoon({ title }: { title: string }) {
  return (
    <section>
      <PageHeader title={title} />
      <div className="state state-empty">
        <p>{title} is coming soon.</p>
      </div>
    </section>
  );
}
